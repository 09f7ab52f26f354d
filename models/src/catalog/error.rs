//! Why the catalog cannot answer a request (the CLI's exit code 2).

/// Why a request cannot be answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogError {
    /// No such id; the closest ids.
    UnknownId {
        /// What was asked.
        id: String,
        /// The ids near it by edit distance (none: nothing near).
        closest: Vec<&'static str>,
    },
    /// A bound out of range; names the flag.
    InvalidBound {
        /// The flag (`--clients`, …).
        flag: &'static str,
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CatalogError::UnknownId { id, closest } if closest.is_empty() => write!(
                f,
                "unknown scenario {id:?} (`locklab models` lists every id)"
            ),
            CatalogError::UnknownId { id, closest } => {
                write!(
                    f,
                    "unknown scenario {id:?}; did you mean {}?",
                    closest.join(", ")
                )
            }
            CatalogError::InvalidBound { flag, reason } => write!(f, "invalid {flag}: {reason}"),
        }
    }
}

impl std::error::Error for CatalogError {}
