//! etcd starts as one member and as a cluster of three on their own ports and data
//! dirs, finds its leader, survives the controls the nemesis uses (kill -9 of the
//! leader, restart of a member, SIGSTOP/SIGCONT) and leaves nothing running.
#![cfg(feature = "backends")]

use std::time::Duration;

use locklab_servers::{EtcdCluster, Server};

const WAIT: Duration = Duration::from_secs(10);

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_single_member_is_healthy_and_its_own_leader() {
    let mut c = EtcdCluster::single().expect("etcd (run ci/setup.sh)");
    assert_eq!(c.leader(WAIT), Some(0));
    let pid = c.members()[0].pid().expect("running");
    drop(c);
    assert!(!alive(pid), "killed on drop");
}

#[test]
fn three_members_elect_a_new_leader_after_a_kill_and_take_the_old_one_back() {
    let mut c = EtcdCluster::three().expect("etcd (run ci/setup.sh)");
    let mut ports: Vec<u16> = c.members().iter().map(|m| m.port()).collect();
    ports.dedup();
    assert_eq!(ports.len(), 3, "own ports");
    let pids: Vec<u32> = c.members().iter().filter_map(|m| m.pid()).collect();
    assert_eq!(pids.len(), 3);
    let old = c.kill_leader(WAIT).expect("a leader");
    let new = c.leader(WAIT).expect("a new leader among the other two");
    assert_ne!(old, new);
    c.member_mut(old)
        .start_again()
        .expect("the old leader rejoins with its data");
    assert!(c.members()[old].healthy());
    // A stopped member answers nothing; continued, it is healthy again.
    let f = (new + 1) % 3;
    c.member_mut(f).pause();
    assert!(c.members()[f].status().is_none());
    c.member_mut(f).resume();
    assert_eq!(c.leader(WAIT).map(|_| c.members()[f].healthy()), Some(true));
    let pids: Vec<u32> = c.members().iter().filter_map(|m| m.pid()).collect();
    drop(c);
    assert!(
        pids.iter().all(|p| !alive(*p)),
        "every member killed on drop"
    );
}
