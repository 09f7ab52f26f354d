//! A network split in words, one way for the model's stories and the run's history:
//! `n0, n1 with c0 | n2 with c1, c2`.

/// Whether bit `i` of `mask` is set; bits past the mask's width are not.
pub fn on_first_side(mask: u64, i: usize) -> bool {
    u32::try_from(i)
        .ok()
        .and_then(|i| mask.checked_shr(i))
        .is_some_and(|m| m & 1 == 1)
}

/// The two sides of a split: the nodes and clients whose bits are set in `node_mask`
/// and `client_mask`, then the others, each side its nodes then its clients.
pub fn sides(nodes: &[String], node_mask: u64, clients: &[String], client_mask: u64) -> String {
    let side = |first: bool| {
        let pick = |names: &[String], mask: u64| -> Vec<String> {
            (0..names.len())
                .filter(|&i| on_first_side(mask, i) == first)
                .map(|i| names[i].clone())
                .collect()
        };
        let (ns, cs) = (pick(nodes, node_mask), pick(clients, client_mask));
        let ns = match ns.is_empty() {
            true => "no node".to_string(),
            false => ns.join(", "),
        };
        match cs.is_empty() {
            true => format!("{ns} (no client)"),
            false => format!("{ns} with {}", cs.join(", ")),
        }
    };
    format!("{} | {}", side(true), side(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    }

    #[test]
    fn each_side_lists_its_nodes_then_its_clients() {
        assert_eq!(
            sides(&names("n", 3), 0b011, &names("c", 3), 0b001),
            "n0, n1 with c0 | n2 with c1, c2"
        );
        assert_eq!(
            sides(&names("n", 2), 0b11, &names("c", 2), 0b01),
            "n0, n1 with c0 | no node with c1"
        );
        assert_eq!(
            sides(&names("n", 2), 0b01, &names("c", 1), 0b1),
            "n0 with c0 | n1 (no client)"
        );
    }

    #[test]
    fn clients_past_the_masks_width_are_on_the_second_side() {
        assert!(on_first_side(1 << 63, 63));
        assert!(!on_first_side(u64::MAX, 64));
        assert!(!on_first_side(u64::MAX, usize::MAX));
    }
}
