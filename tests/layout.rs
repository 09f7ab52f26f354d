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
    for krate in [
        "models/src",
        "traces/src",
        "implementations/src",
        "jepsen-like/src",
        "servers/src",
        "src",
    ] {
        sources(&root.join(krate), &mut files);
    }
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
