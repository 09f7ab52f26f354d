//! Faults left to inject: what a model's configuration starts from and its state carries
//! down every path, one count per [`Fault`], so a family's faults need no struct of
//! their own and a new fault no new field.

use crate::registry::Fault;

/// How many faults the registry names: one count each.
const FAULTS: usize = Fault::ALL.len();

/// Faults left, per [`Fault`]; a fault a family does not model stays at 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Budget([u8; FAULTS]);

impl Budget {
    /// The budgets a row's bounds list (a fault listed twice counts twice).
    pub fn of(faults: &[(Fault, u8)]) -> Budget {
        let mut b = Budget::default();
        for &(f, n) in faults {
            b.0[f as usize] = b.0[f as usize].saturating_add(n);
        }
        b
    }

    /// How many of `fault` are left.
    pub fn left(&self, fault: Fault) -> u8 {
        self.0[fault as usize]
    }

    /// Whether one `fault` is left.
    pub fn has(&self, fault: Fault) -> bool {
        self.left(fault) > 0
    }

    /// Whether any of `faults` is budgeted.
    pub fn any(&self, faults: &[Fault]) -> bool {
        faults.iter().any(|f| self.has(*f))
    }

    /// Spends one `fault`, which must be left.
    pub fn spend(&mut self, fault: Fault) {
        debug_assert!(self.has(fault), "{fault} spent beyond its budget");
        self.0[fault as usize] = self.left(fault).saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_has_its_own_count() {
        for (i, f) in Fault::ALL.iter().enumerate() {
            let b = Budget::of(&[(*f, 2), (*f, 1)]);
            assert_eq!(b.left(*f), 3, "{f}");
            let others = Fault::ALL.iter().filter(|g| *g != f);
            assert!(others.clone().all(|g| b.left(*g) == 0), "{f} at {i}");
            let mut spent = b;
            spent.spend(*f);
            assert_eq!(spent.left(*f), 2);
            assert!(spent.any(&[*f]) && !Budget::default().any(Fault::ALL));
        }
    }
}
