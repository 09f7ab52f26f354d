//! ZooKeeper starts standalone and as an ensemble of three on its own ports, myids and
//! data dirs, finds its leader, survives the controls the nemesis uses (kill -9 of the
//! leader, restart of a server with its data, SIGSTOP/SIGCONT) and leaves nothing
//! running.
#![cfg(feature = "backends")]

use std::time::Duration;

use locklab_servers::zk::Mode;
use locklab_servers::{Server, ZkEnsemble};

const WAIT: Duration = Duration::from_secs(15);

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_single_server_stands_alone_and_is_killed_on_drop() {
    let mut z = ZkEnsemble::single().expect("zookeeper and java (run ci/setup.sh)");
    assert_eq!(z.servers()[0].mode(), Some(Mode::Standalone));
    assert_eq!(z.leader(WAIT), Some(0));
    assert_eq!(z.connect_string(), z.servers()[0].addr());
    let pid = z.servers()[0].pid().expect("running");
    drop(z);
    assert!(!alive(pid), "killed on drop");
}

#[test]
fn three_servers_elect_a_new_leader_after_a_kill_and_take_the_old_one_back() {
    let mut z = ZkEnsemble::three().expect("zookeeper and java (run ci/setup.sh)");
    let mut ports: Vec<u16> = z.servers().iter().map(|s| s.port()).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 3, "own client ports");
    let ids: Vec<u32> = z.servers().iter().map(|s| s.myid()).collect();
    assert_eq!(ids, [1, 2, 3]);
    for s in z.servers() {
        let myid = std::fs::read_to_string(s.dir().join("data/myid")).expect("myid");
        assert_eq!(myid.trim(), s.myid().to_string());
    }
    assert_eq!(z.connect_string().split(',').count(), 3);
    let old = z.kill_leader(WAIT).expect("a leader");
    let new = z.leader(WAIT).expect("a new leader among the other two");
    assert_ne!(old, new);
    z.server_mut(old)
        .start_again()
        .expect("the old leader rejoins with its data");
    assert_eq!(z.servers()[old].mode(), Some(Mode::Follower));
    // A stopped server answers nothing; continued, it serves again.
    let f = (new + 1) % 3;
    z.server_mut(f).pause();
    assert_eq!(z.servers()[f].mode(), None);
    z.server_mut(f).resume();
    assert_eq!(z.leader(WAIT), Some(new));
    let pids: Vec<u32> = z.servers().iter().filter_map(|s| s.pid()).collect();
    assert_eq!(pids.len(), 3);
    drop(z);
    assert!(
        pids.iter().all(|p| !alive(*p)),
        "every server killed on drop"
    );
}
