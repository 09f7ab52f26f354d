//! The shape the README promises, checked on the source tree itself: a family is one
//! folder per crate plus one arm in each crate's registry. Every source file that names
//! a backend or a family (a backend's spelling, a `Backend::…` or `Family::…` variant)
//! sits in a family's room — a folder named after it (`jepsen-like/src/zk/`), or in the
//! servers crate a file (`servers/src/etcd.rs`) — or is one of the registries below.
//! Test code is left out: it may name what it tests.

use std::path::{Path, PathBuf};

/// The files outside a family's room that may name one, each a registry: the one place
/// in its crate that lists the families.
const REGISTRIES: &[&str] = &[
    // The names: families, backends, faults, properties.
    "models/src/registry.rs",
    // The catalog's rows, family by family.
    "models/src/catalog.rs",
    // Each backend's history vocabulary, by the header's backend.
    "traces/src/backend/mod.rs",
    // The harness's families, by the catalog row's family.
    "jepsen-like/src/registry.rs",
    // The families a user's protocol may be described in.
    "models/src/protocol/mod.rs",
];

/// The rooms of the families, as folder or file names.
const ROOMS: &[&str] = &[
    "redis",
    "redlock",
    "sql",
    "mariadb",
    "postgres",
    "etcd",
    "zk",
    "inventory",
];

/// What names a backend or a family.
const NAMES: &[&str] = &[
    "\"redis\"",
    "\"mariadb\"",
    "\"postgres\"",
    "\"etcd\"",
    "\"zookeeper\"",
    "Backend::Redis",
    "Backend::Mariadb",
    "Backend::Postgres",
    "Backend::Etcd",
    "Backend::Zookeeper",
    "Family::Redis",
    "Family::Redlock",
    "Family::Sql",
    "Family::Etcd",
    "Family::Zk",
    "Family::Inventory",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file of the crates (their `src/` folders), tests' own files included.
fn crate_sources(root: &Path, out: &mut Vec<PathBuf>) {
    for krate in [
        "models/src",
        "traces/src",
        "implementations/src",
        "jepsen-like/src",
        "servers/src",
        "src",
    ] {
        sources(&root.join(krate), out);
    }
}

fn in_a_room(rel: &Path) -> bool {
    rel.components().any(|c| {
        let name = c.as_os_str().to_string_lossy();
        let stem = name.strip_suffix(".rs").unwrap_or(&name);
        ROOMS.contains(&stem)
    })
}

/// The lines of `text` that are code outside its test module and not comments. A
/// feature gate (`#[cfg(feature = "zookeeper")]`) is left out too: the features are
/// the build's list of families (the crates' Cargo.toml), and a gate only says where
/// a family may be left out.
fn code(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .take_while(|l| !l.trim_start().starts_with("#[cfg(test)]"))
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with("#[cfg(") && l.contains("feature = "))
        })
}

#[test]
fn only_family_rooms_and_the_registries_name_a_backend() {
    let root = root();
    let mut files = Vec::new();
    crate_sources(&root, &mut files);
    assert!(
        files.len() > 100,
        "the source tree was not found: {}",
        root.display()
    );
    let mut naming: Vec<String> = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        if in_a_room(rel) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        if code(&text).any(|l| NAMES.iter().any(|n| l.contains(n))) {
            naming.push(rel.to_string_lossy().into_owned());
        }
    }
    naming.sort();
    let mut expected: Vec<String> = REGISTRIES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(
        naming, expected,
        "files outside a family's room that name a backend or a family"
    );
}

/// Each package's integration tests are one binary (`tests/main.rs`, `autotests =
/// false`): a file of `tests/` that `main.rs` does not name would never be built nor
/// run, so every one is named, and every package with tests builds them that way.
#[test]
fn every_test_file_is_a_module_of_its_packages_one_test_binary() {
    let root = root();
    for package in [".", "models", "traces", "implementations", "servers"] {
        let dir = root.join(package).join("tests");
        let files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".rs") && n != "main.rs")
            .collect();
        let manifest =
            std::fs::read_to_string(root.join(package).join("Cargo.toml")).expect("Cargo.toml");
        if files.len() == 1 && !dir.join("main.rs").exists() {
            // A single file is a single binary already.
            continue;
        }
        assert!(
            manifest.contains("autotests = false") && manifest.contains("path = \"tests/main.rs\""),
            "{package}: its tests are not one binary (autotests = false, tests/main.rs)"
        );
        let main = std::fs::read_to_string(dir.join("main.rs")).expect("tests/main.rs");
        for f in files {
            let module = format!("mod {};", f.trim_end_matches(".rs"));
            assert!(
                main.lines().any(|l| l.trim() == module),
                "{package}/tests/{f} is not a module of {package}/tests/main.rs: it is never built"
            );
        }
    }
}

/// The source files of the crates, each with its code as [`code`] reads it, by its path
/// from the root.
fn tree_code() -> Vec<(String, String)> {
    let root = root();
    let mut files = Vec::new();
    crate_sources(&root, &mut files);
    files
        .iter()
        // A module's tests in a file of their own are test code.
        .filter(|f| f.file_name().is_none_or(|n| n != "tests.rs"))
        .map(|f| {
            let rel = f.strip_prefix(&root).unwrap_or(f);
            let text = std::fs::read_to_string(f).unwrap_or_default();
            let code: Vec<&str> = code(&text).collect();
            (rel.to_string_lossy().into_owned(), code.join("\n"))
        })
        .collect()
}

/// The section of `docs/architecture.md` under heading `title`, up to the next one.
fn guide(title: &str) -> String {
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).expect("the guide");
    let heading = format!("## {title}");
    let start = text
        .find(&heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let body = &text[start + heading.len()..];
    body[..body.find("\n## ").unwrap_or(body.len())].to_string()
}

/// The paths in backticks that a text names (`models/src/zk/catalog.rs`).
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.contains('/') && !t.contains(' ') && !t.contains("::"))
        .filter(|t| t.ends_with(".rs") || t.ends_with('/'))
        .map(str::to_string)
        .collect()
}

/// Every file the guide's "Add a …" lists name exists, and "Add a family" names every
/// registry the layout test allows.
#[test]
fn the_guides_lists_name_files_that_exist_and_every_registry() {
    let root = root();
    for section in ["Add a family", "Add a row", "Add a client fault"] {
        let text = guide(section);
        let paths = named_paths(&text);
        assert!(paths.len() >= 4, "{section}: {paths:?}");
        for p in paths {
            assert!(
                root.join(&p).exists(),
                "{section} names {p}, which is not there"
            );
        }
    }
    let family = guide("Add a family");
    for r in REGISTRIES {
        assert!(
            family.contains(r),
            "\"Add a family\" does not name the registry {r}"
        );
    }
}

/// The files whose code names every variant of `variants` (as `Kind::Variant`): the
/// exhaustive lists and matches a new variant must be added to.
fn naming_every(tree: &[(String, String)], kind: &str, variants: &[String]) -> Vec<String> {
    tree.iter()
        .filter(|(_, code)| {
            variants.iter().all(|v| {
                let name = format!("{kind}::{v}");
                let ident = |c: char| c.is_alphanumeric() || c == '_';
                code.match_indices(&name).any(|(i, _)| {
                    !code[..i].ends_with(ident) && !code[i + name.len()..].starts_with(ident)
                })
            })
        })
        .map(|(path, _)| path.clone())
        .collect()
}

/// A new client fault does not compile until every exhaustive list and match over the
/// faults has its arm: those places are the guide's "Add a client fault" list, and at
/// most three of them are outside the models.
#[test]
fn a_new_client_fault_is_a_compile_error_exactly_where_the_guide_says() {
    use locklab_models::kernel::ClientFault;
    use locklab_models::registry::Fault;
    let tree = tree_code();
    let faults: Vec<String> = Fault::ALL.iter().map(|f| format!("{f:?}")).collect();
    let client: Vec<String> = ClientFault::ALL.iter().map(|f| format!("{f:?}")).collect();
    let mut places = naming_every(&tree, "Fault", &faults);
    places.extend(naming_every(&tree, "ClientFault", &client));
    places.sort();
    places.dedup();
    assert!(places.len() >= 4, "{places:?}");
    let listed = guide("Add a client fault");
    for p in &places {
        assert!(
            listed.contains(&format!("`{p}`")),
            "{p} names every fault, so a new one must be added there; \"Add a client fault\" in docs/architecture.md does not list it"
        );
    }
    let outside: Vec<&String> = places
        .iter()
        .filter(|p| !p.starts_with("models/"))
        .collect();
    assert!(outside.len() <= 3, "outside the models: {outside:?}");
}

/// A row is written in its family's folder: each id's row is in exactly one file, a
/// family room's `catalog.rs`.
#[test]
fn every_row_is_written_in_its_familys_catalog() {
    use locklab_models::registry::ScenarioId;
    let tree = tree_code();
    for id in ScenarioId::ALL {
        let row = format!("id: ScenarioId::{id:?}.into()");
        let files: Vec<&String> = tree
            .iter()
            .filter(|(_, code)| code.contains(&row))
            .map(|(path, _)| path)
            .collect();
        assert_eq!(files.len(), 1, "{id}: its row is in {files:?}");
        let path = Path::new(files[0]);
        assert!(
            in_a_room(path) && path.file_name().is_some_and(|n| n == "catalog.rs"),
            "{id}: its row is in {}, not a family's catalog.rs",
            files[0]
        );
    }
}
