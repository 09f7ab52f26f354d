//! Sequence-diagram pages: a scenario's shortest counterexample drawn from the model's
//! structured story ([`locklab_models::diagram`]), the lanes of a real run drawn from
//! its recorded history, and the index over the catalog. Hand-written SVG in one
//! self-contained document; every text escaped.

pub mod history_page;
pub mod index;
pub mod lasso;
pub mod links;
pub mod model;
pub mod page;
pub mod run;
pub mod run_page;
pub mod svg;

pub use history_page::history_page;
pub use index::{index_page, IndexRow};
pub use model::model_page;
pub use run::{run_diagram, RunDiagram};
pub use run_page::{run_page, AgreementRow, RunSummary};
