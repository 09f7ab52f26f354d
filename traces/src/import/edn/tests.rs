//! The cases of [`super`].

use super::*;

fn read(text: &str) -> Result<Edn, EdnError> {
    Reader::new(text).value()
}

#[test]
fn reads_a_jepsen_op() {
    let v = read(r#"{:process 1, :type :ok, :f :cas, :value [1 2], :key "k\"x"}"#).expect("parses");
    assert_eq!(v.get("process"), Some(&Edn::Int(1)));
    assert_eq!(v.get("f").and_then(Edn::keyword), Some("cas"));
    assert_eq!(
        v.get("value"),
        Some(&Edn::List(vec![Edn::Int(1), Edn::Int(2)]))
    );
    assert_eq!(v.get("key"), Some(&Edn::Str("k\"x".into())));
}

#[test]
fn truncation_is_an_error_not_a_panic() {
    for bad in [
        "{:a 1", "[1 2", "\"abc", "{:a}", ")", "#", "#_", "\\", "#foo", "[1 2)", "\"\\u12",
    ] {
        assert!(read(bad).is_err(), "{bad}");
    }
}

#[test]
fn discards_comments_and_tags() {
    let v = read("[1 #_2 ; three\n #_ #_ 4 5 6 #_[7 [8]]]").expect("parses");
    assert_eq!(v, Edn::List(vec![Edn::Int(1), Edn::Int(6)]));
    let op = read(
        "#jepsen.history.Op{:index 0, :time 1, :type :invoke, :process 0, :f :read, :value nil}",
    )
    .expect("parses");
    assert_eq!(op.get("f").and_then(Edn::keyword), Some("read"));
    assert_eq!(
        read(r#"#inst "2024-01-01T00:00:00Z""#),
        Ok(Edn::Str("2024-01-01T00:00:00Z".into()))
    );
    assert_eq!(
        read(r#"#uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6""#).map(|v| v.to_json()),
        Ok(serde_json::json!("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"))
    );
}

#[test]
fn numbers_characters_and_names() {
    assert_eq!(read("12N"), Ok(Edn::Int(12)));
    assert_eq!(
        read("123456789012345678901234567890"),
        Ok(Edn::BigInt("123456789012345678901234567890".into()))
    );
    assert_eq!(
        read("18446744073709551615").map(|v| v.as_u64()),
        Ok(Some(u64::MAX))
    );
    assert_eq!(read("1.5M"), Ok(Edn::Float(1.5)));
    assert_eq!(read("-1/2"), Ok(Edn::Float(-0.5)));
    assert_eq!(read("0x1F"), Ok(Edn::Int(31)));
    assert_eq!(read("017"), Ok(Edn::Int(15)));
    assert_eq!(read("-2.5e3"), Ok(Edn::Float(-2500.0)));
    assert!(read("1abc").is_err());
    assert!(read("1/0").is_err());
    assert_eq!(read("\\a"), Ok(Edn::Char('a')));
    assert_eq!(read("\\newline"), Ok(Edn::Char('\n')));
    assert_eq!(read("\\u00e9"), Ok(Edn::Char('é')));
    assert_eq!(read("\\("), Ok(Edn::Char('(')));
    assert!(read("\\foo").is_err());
    assert_eq!(
        read(":knossos.model/foo"),
        Ok(Edn::Keyword("knossos.model/foo".into()))
    );
    assert_eq!(read("a.b/c"), Ok(Edn::Symbol("a.b/c".into())));
    assert_eq!(
        read("#:a{:b 1 :_/c 2 :d/e 3}"),
        Ok(Edn::Map(vec![
            (Edn::Keyword("a/b".into()), Edn::Int(1)),
            (Edn::Keyword("c".into()), Edn::Int(2)),
            (Edn::Keyword("d/e".into()), Edn::Int(3)),
        ]))
    );
    assert!(matches!(read("##NaN"), Ok(Edn::Float(f)) if f.is_nan()));
}

#[test]
fn strings_with_escapes() {
    assert_eq!(
        read(r#""a\tb\n\"c\"\\ \u00e9 \ud83d\ude00 \101""#),
        Ok(Edn::Str("a\tb\n\"c\"\\ é 😀 A".into()))
    );
    assert!(read(r#""\q""#).is_err());
    assert_eq!(read("\"é\nx\""), Ok(Edn::Str("é\nx".into())));
}

#[test]
fn errors_name_the_line_where_the_form_opened() {
    let e = read("\n\n{:a 1\n:b 2\n").expect_err("truncated");
    assert_eq!(e.line, 3, "{e:?}");
    assert!(e.message.contains("truncated"), "{e:?}");
    let e = read("\"abc\n\n").expect_err("unterminated");
    assert_eq!(e.line, 1);
    let e = read("{:a 1 :a 2}").expect_err("duplicate");
    assert!(e.message.contains("duplicate key :a"), "{e:?}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for open in ["[", "(", "{:a ", "#{", "#_ ", "#t "] {
        let text = open.repeat(100_000);
        let e = read(&text).expect_err("too deep");
        assert!(
            e.message.contains("nested") || e.message.contains("truncated"),
            "{open}: {e:?}"
        );
    }
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(read(&ok).is_ok());
    let too_deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert!(read(&too_deep).is_err());
}
