//! The JSON contract as a test sees it: the schemas `locklab generate schema` prints,
//! and a strict validation of a document against one of them.

// Each test binary includes this file and uses a part of it.
#![allow(dead_code)]

use std::process::Command;

/// Every schema, by document name, as `generate schema` prints them.
pub fn schemas() -> serde_json::Map<String, serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["generate", "schema"])
        .output()
        .expect("runs locklab");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout) {
        Ok(serde_json::Value::Object(all)) => all,
        other => panic!("generate schema: not one JSON object: {other:?}"),
    }
}

/// `schema` with every object closed to properties it does not name: each schema
/// that names properties or combines subschemas gets `unevaluatedProperties: false`,
/// which sees what its `$ref`s and branches named; a branch itself does not (it would
/// not see its parent's properties).
fn strict(schema: &mut serde_json::Value) {
    close(schema, false);
}

fn close(schema: &mut serde_json::Value, branch: bool) {
    match schema {
        serde_json::Value::Object(o) => {
            let combines = ["oneOf", "anyOf", "allOf"]
                .iter()
                .any(|k| o.contains_key(*k));
            if !branch
                && (o.contains_key("properties") || combines)
                && !o.contains_key("additionalProperties")
            {
                o.insert("unevaluatedProperties".into(), false.into());
            }
            for (k, v) in o.iter_mut() {
                match k.as_str() {
                    // A condition's own properties are a test, not the object's shape.
                    "if" | "not" => {}
                    "oneOf" | "anyOf" | "allOf" => match v {
                        serde_json::Value::Array(a) => a.iter_mut().for_each(|b| close(b, true)),
                        other => close(other, false),
                    },
                    _ => close(v, false),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|v| close(v, false)),
        _ => {}
    }
}

/// Asserts that `doc` (printed by `args`) is valid against `schema`.
pub fn assert_valid(
    name: &str,
    schema: &serde_json::Value,
    doc: &serde_json::Value,
    args: &[&str],
) {
    let mut schema = schema.clone();
    strict(&mut schema);
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("schema {name} does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{args:?} does not match schema {name}:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

/// Asserts that `doc`, printed by `args`, is a valid `name` document.
pub fn assert_document(name: &str, doc: &serde_json::Value, args: &[&str]) {
    let all = schemas();
    let schema = all
        .get(name)
        .unwrap_or_else(|| panic!("no schema named {name}"));
    assert_valid(name, schema, doc, args);
}
