use super::*;

fn render(text: &str, call: u64, unix_ms: u64) -> String {
    let t = Template::parse(text).unwrap();
    let mut rng = Rng::new(7);
    let mut cx = Context::at(call, &mut rng, unix_ms);
    let mut out = Vec::new();
    let len = t.len(&mut cx);
    t.write(&mut cx, &mut out);
    assert_eq!(out.len(), len, "{text}: the length said before writing");
    String::from_utf8(out).unwrap()
}

#[test]
fn placeholders_parse_and_escapes_are_literal() {
    let table: [(&str, Option<&str>); 8] = [
        ("plain", Some("plain")),
        ("", Some("")),
        // The escape, alone and beside text; a lone `}}` needs none.
        ("{{{{", Some("{{")),
        ("a{{{{b}}c", Some("a{{b}}c")),
        ("}} {", Some("}} {")),
        ("{{n}}", None),
        ("id-{{ uuid }}", None),
        ("{{{{{{n}}", None),
    ];
    for (text, fixed) in table {
        assert_eq!(Template::parse(text).unwrap().fixed().as_deref(), fixed, "{text}");
    }
}

#[test]
fn bad_placeholders_are_named() {
    let table: [(&str, TemplateError); 7] = [
        ("{{id}}", TemplateError::Unknown("id".into())),
        ("x {{ N }} y", TemplateError::Unknown("N".into())),
        ("{{}}", TemplateError::Unknown("".into())),
        ("{{n", TemplateError::Unclosed),
        ("{{rand:0}}", TemplateError::RandLength("0".into())),
        ("{{rand:+5}}", TemplateError::RandLength("+5".into())),
        ("{{rand:65537}}", TemplateError::RandLength("65537".into())),
    ];
    for (text, err) in table {
        assert_eq!(Template::parse(text), Err(err), "{text}");
    }
    assert_eq!(
        TemplateError::Unknown("id".into()).to_string(),
        "unknown template {{id}} (known: {{n}}, {{uuid}}, {{rand:N}}, {{now}}, {{unix_ms}}; {{{{ is a literal {{)"
    );
    assert_eq!(TemplateError::Unclosed.to_string(), "a {{ without its }} (write {{{{ for a literal {{)");
    assert_eq!(
        TemplateError::RandLength("0".into()).to_string(),
        "{{rand:0}}: N must be a whole number from 1 to 65536"
    );
}

#[test]
fn the_call_number_and_the_clock_render_exactly() {
    assert_eq!(render("req-{{n}}", 0, 0), "req-0");
    assert_eq!(render("{{n}}/{{n}}", 18_446_744_073_709_551_615, 0), "18446744073709551615/18446744073709551615");
    assert_eq!(render("{{{{n}} is {{n}}", 42, 0), "{{n}} is 42");
    let table: [(u64, &str); 5] = [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
        (951_782_400_007, "2000-02-29T00:00:00.007Z"),
        (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
        // Past year 9999 the clock is held at its end, so the length stays 24.
        (u64::MAX, "9999-12-31T23:59:59.999Z"),
    ];
    for (ms, want) in table {
        assert_eq!(render("{{now}}", 0, ms), want, "{ms}");
    }
    assert_eq!(render("{{unix_ms}}", 0, 1_700_000_000_123), "1700000000123");
    assert_eq!(render("t={{unix_ms}} {{now}}", 0, 5), "t=5 1970-01-01T00:00:00.005Z");
}

#[test]
fn uuids_are_version_4_and_rand_is_alphanumeric() {
    let mut seen = std::collections::HashSet::new();
    let t = Template::parse("{{uuid}}").unwrap();
    let mut rng = Rng::new(1);
    for call in 0..1000 {
        let mut out = Vec::new();
        t.write(&mut Context::at(call, &mut rng, 0), &mut out);
        let text = String::from_utf8(out).unwrap();
        let groups: Vec<&str> = text.split('-').collect();
        assert_eq!(groups.iter().map(|g| g.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12], "{text}");
        assert!(text.bytes().all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{text}");
        assert_eq!(&groups[2][..1], "4", "{text}: version");
        assert!(matches!(&groups[3][..1], "8" | "9" | "a" | "b"), "{text}: variant");
        assert!(seen.insert(text));
    }
    let mut letters = std::collections::HashSet::new();
    for n in [1, 5, 300] {
        let text = render(&format!("{{{{rand:{n}}}}}"), 0, 0);
        assert_eq!(text.len(), n);
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric()), "{text}");
        letters.extend(text.bytes());
    }
    assert!(letters.len() > 50, "300 draws cover most of the 62 characters: {}", letters.len());
}

#[test]
fn digits_count() {
    for (n, d) in [(0, 1), (9, 1), (10, 2), (999, 3), (1000, 4), (u64::MAX, 20)] {
        assert_eq!(digits(n), d, "{n}");
    }
}
