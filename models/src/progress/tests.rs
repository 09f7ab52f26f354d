//! The promises on a toy lock whose every move is visible: two clients take a ticket,
//! then a server grants the lock — in ticket order, or to anyone.

use stateright::Model;

use super::*;
use crate::check::Narrate;
use crate::registry::Property;

/// Each client: 0 idle, 1 holds ticket `tickets[c]` and waits, 2 holds the lock, 3 done.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Toy {
    phase: [u8; 2],
    tickets: [u64; 2],
    next: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Move {
    Ticket(usize),
    Grant(usize),
    Leave(usize),
}

struct Lock {
    in_order: bool,
    /// A client that leaves asks again (a new ticket), for ever.
    again: bool,
}

impl Model for Lock {
    type State = Toy;
    type Action = Move;

    fn init_states(&self) -> Vec<Toy> {
        vec![Toy {
            phase: [0, 0],
            tickets: [0, 0],
            next: 1,
        }]
    }

    fn actions(&self, _: &Toy, out: &mut Vec<Move>) {
        for c in 0..2 {
            out.extend([Move::Ticket(c), Move::Grant(c), Move::Leave(c)]);
        }
    }

    fn next_state(&self, s: &Toy, a: Move) -> Option<Toy> {
        let mut t = s.clone();
        match a {
            Move::Ticket(c) if s.phase[c] == 0 => {
                t.phase[c] = 1;
                t.tickets[c] = s.next;
                // Tickets wrap (mod 4) only so that a lock asked for ever stays finite;
                // the ones compared are never a wrap apart.
                t.next = s.next % 4 + 1;
            }
            Move::Grant(c) if s.phase[c] == 1 && !s.phase.contains(&2) => {
                let other = 1 - c;
                let first = s.phase[other] != 1 || s.tickets[other] > s.tickets[c];
                if self.in_order && !first {
                    return None;
                }
                t.phase[c] = 2;
            }
            Move::Leave(c) if s.phase[c] == 2 => t.phase[c] = if self.again { 0 } else { 3 },
            _ => return None,
        }
        Some(t)
    }
}

impl Narrate for Lock {
    fn describe_state(&self, s: &Toy) -> Vec<String> {
        vec![format!("{s:?}")]
    }

    fn describe_action(&self, _: &Toy, a: &Move) -> String {
        format!("{a:?}")
    }

    fn is_fault(&self, _: &Move) -> bool {
        false
    }

    fn why(&self, _: Property, _: &[(Option<Move>, Toy)]) -> String {
        String::new()
    }
}

impl Progress for Lock {
    fn stages(&self, s: &Toy) -> Vec<Stage> {
        s.phase
            .iter()
            .map(|p| match p {
                0 => Stage::Running,
                1 => Stage::Queued,
                2 => Stage::Inside(0),
                _ => Stage::Done,
            })
            .collect()
    }

    fn fairness(&self, a: &Move) -> Option<Class> {
        match *a {
            Move::Ticket(c) | Move::Leave(c) => Some(client(c)),
            Move::Grant(_) => Some(server(0)),
        }
    }

    fn deadline_ahead(&self, _: &Toy) -> bool {
        false
    }

    fn clock_at_bound(&self, _: &Toy) -> bool {
        true
    }

    fn arrival(&self, s: &Toy, c: usize) -> Option<u64> {
        (s.phase[c] == 1).then_some(s.tickets[c])
    }

    fn ordered(&self) -> bool {
        true
    }
}

fn fifo(lock: &Lock) -> Kept {
    check(lock, &Limits::default())
        .into_iter()
        .find(|v| v.promise == Promise::Fifo)
        .map(|v| v.kept)
        .expect("an ordered lock is judged for FIFO")
}

#[test]
fn a_lock_that_grants_anyone_breaks_fifo_with_the_shortest_story() {
    match fifo(&Lock {
        in_order: false,
        again: false,
    }) {
        Kept::Violated { lasso } => {
            // c0 takes ticket 1, c1 ticket 2, and c1 is granted first.
            let steps: Vec<&str> = lasso.steps.iter().map(|s| s.action.as_str()).collect();
            assert_eq!(steps, ["Ticket(0)", "Ticket(1)", "Grant(1)"], "{lasso}");
            assert_eq!(lasso.client, 0, "c0 is the one passed over");
            assert!(lasso
                .closing
                .contains("c1 is granted the lock at step 3 while c0"));
            assert_eq!(lasso.shape(), "c0 passed over (3 steps)");
            assert!(lasso
                .to_string()
                .starts_with("Counterexample for fifo (3 steps"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lock_that_grants_in_ticket_order_keeps_every_promise() {
    let v = check(
        &Lock {
            in_order: true,
            again: false,
        },
        &Limits::default(),
    );
    assert_eq!(v.len(), 3);
    assert!(v.iter().all(|v| matches!(v.kept, Kept::Holds)), "{v:#?}");
}

/// Asked for ever and granted to anyone, the lock can starve c0 for good while c1
/// takes it again and again: a lasso whose cycle is c1's turns, fair because the
/// server grants in it and c0 has no step of its own while it waits.
#[test]
fn a_lock_asked_for_ever_can_starve_a_client_in_a_cycle() {
    let v = check(
        &Lock {
            in_order: false,
            again: true,
        },
        &Limits::default(),
    );
    let starve = v
        .iter()
        .find(|v| v.promise == Promise::StarvationFree)
        .expect("judged");
    match &starve.kept {
        Kept::Violated { lasso } => {
            let cycle: Vec<&str> = lasso.cycle().iter().map(|s| s.action.as_str()).collect();
            assert!(!cycle.is_empty(), "a cycle, not a dead end\n{lasso}");
            assert!(
                cycle.iter().all(|a| a.ends_with("(1)")),
                "only c1 moves in the cycle: {cycle:?}"
            );
            assert!(cycle.contains(&"Grant(1)"), "{cycle:?}");
            assert_eq!(lasso.client, 0);
            assert!(
                lasso.closing.contains("repeat for ever"),
                "{}",
                lasso.closing
            );
            assert!(lasso.to_string().contains("↻ from here on, for ever:"));
        }
        other => panic!("{other:?}"),
    }
}
