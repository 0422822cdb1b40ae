//! The event stream reader's tests: the standard's examples, every split of a stream, and
//! random streams against a plain reading of the standard.

use super::*;

/// An event, owned, for comparing: (type, data, last id).
type Owned = (Vec<u8>, Vec<u8>, Vec<u8>);

fn ev(event_type: &str, data: &str, id: &str) -> Owned {
    (event_type.as_bytes().to_vec(), data.as_bytes().to_vec(), id.as_bytes().to_vec())
}

/// Feeds the chunks in order; the events, and the error if one stopped the stream.
fn run(p: &mut EventParser, chunks: &[&[u8]]) -> (Vec<Owned>, Option<TooLong>) {
    let mut events = Vec::new();
    for chunk in chunks {
        let before = events.len();
        let result =
            p.feed(chunk, |e: Event<'_>| events.push((e.event_type.to_vec(), e.data.to_vec(), e.last_id.to_vec())));
        match result {
            Ok(n) => assert_eq!(n, events.len() - before, "feed's count"),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

fn parse(stream: &[u8]) -> Vec<Owned> {
    let (events, err) = run(&mut EventParser::new(), &[stream]);
    assert_eq!(err, None);
    events
}

#[test]
fn spec_multiline_data() {
    assert_eq!(parse(b"data: YHOO\ndata: +2\ndata: 10\n\n"), vec![ev("", "YHOO\n+2\n10", "")]);
}

#[test]
fn spec_four_blocks_with_ids() {
    let stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n";
    let mut p = EventParser::new();
    let (events, _) = run(&mut p, &[stream]);
    // The id field sets the last event ID before the blank line dispatches its block.
    assert_eq!(events, vec![ev("", "first event", "1"), ev("", "second event", "")]);
    assert_eq!(p.comments(), 1);
    // The third block never saw its blank line: the end of the stream does not dispatch it.
    assert!(p.is_mid_event());
    let (events, _) = run(&mut p, &[b"\n"]);
    assert_eq!(events, vec![ev("", " third event", "")]);
    assert!(!p.is_mid_event());
}

#[test]
fn spec_data_with_and_without_space() {
    assert_eq!(parse(b"data:test\n\ndata: test\n\n"), vec![ev("", "test", ""), ev("", "test", "")]);
}

#[test]
fn spec_empty_data() {
    let mut p = EventParser::new();
    let (events, _) = run(&mut p, &[b"data\n\ndata\ndata\n\ndata:"]);
    assert_eq!(events, vec![ev("", "", ""), ev("", "\n", "")]);
    assert!(p.is_mid_event());
}

#[test]
fn spec_event_types() {
    let stream =
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\ndata: x\n\n";
    let events = parse(stream);
    assert_eq!(
        events,
        vec![ev("add", "73857293", ""), ev("remove", "2153", ""), ev("add", "113411", ""), ev("", "x", "")]
    );
    let mut p = EventParser::new();
    let mut kinds = Vec::new();
    p.feed(b"event: add\ndata: 1\n\ndata: 2\n\n", |e: Event<'_>| kinds.push(e.kind().to_vec())).unwrap();
    assert_eq!(kinds, vec![b"add".to_vec(), b"message".to_vec()]);
}

#[test]
fn block_without_data_resets_type_only() {
    let mut p = EventParser::new();
    let (events, _) = run(&mut p, &[b"event: ping\nid: 7\n\ndata: after\n\n"]);
    assert_eq!(events, vec![ev("", "after", "7")]);
    assert_eq!(p.last_id(), b"7");
}

#[test]
fn ids_persist_clear_and_reject_nul() {
    let mut p = EventParser::new();
    let stream = b"id: 5\ndata: a\n\ndata: b\n\nid: 6\0x\ndata: c\n\nid:\ndata: d\n\n";
    let (events, _) = run(&mut p, &[stream]);
    assert_eq!(events, vec![ev("", "a", "5"), ev("", "b", "5"), ev("", "c", "5"), ev("", "d", "")]);
    assert_eq!(p.last_id(), b"");
}

#[test]
fn retry_takes_digits_only() {
    let mut p = EventParser::new();
    assert_eq!(p.retry_ms(), None);
    let cases: [(&[u8], Option<u64>); 8] = [
        (b"retry: 500\n", Some(500)),
        (b"retry: 5x\n", Some(500)),
        (b"retry:\n", Some(500)),
        (b"retry: -1\n", Some(500)),
        (b"retry:  7\n", Some(500)),
        (b"retry:0\n", Some(0)),
        (b"retry: 99999999999999999999999\n", Some(u64::MAX)),
        (b"retry: 1500\n", Some(1500)),
    ];
    for (line, want) in cases {
        run(&mut p, &[line]);
        assert_eq!(p.retry_ms(), want, "after {:?}", String::from_utf8_lossy(line));
    }
}

#[test]
fn comments_are_counted_and_do_not_touch_the_event() {
    let mut p = EventParser::new();
    let (events, _) = run(&mut p, &[b": keep-alive\n\n:\ndata: a\n: mid-event\ndata: b\n\n:ping\r\n"]);
    assert_eq!(events, vec![ev("", "a\nb", "")]);
    assert_eq!(p.comments(), 4);
}

#[test]
fn fields_unknown_case_sensitive_colons_and_bare_names() {
    let stream = b"Data: no\nfoo: bar\ndata: a:b: c\ndata\nevent\nretry\n\n";
    let mut p = EventParser::new();
    let (events, _) = run(&mut p, &[stream]);
    assert_eq!(events, vec![ev("", "a:b: c\n", "")]);
    assert_eq!(p.retry_ms(), None);
}

#[test]
fn line_ends_cr_lf_crlf_are_one() {
    let want = vec![ev("t", "a\nb", "1"), ev("", "c", "1")];
    for stream in [
        &b"event: t\nid: 1\ndata: a\ndata: b\n\ndata: c\n\n"[..],
        b"event: t\rid: 1\rdata: a\rdata: b\r\rdata: c\r\r",
        b"event: t\r\nid: 1\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
        b"event: t\r\nid: 1\rdata: a\ndata: b\r\n\rdata: c\n\r\n",
    ] {
        assert_eq!(parse(stream), want, "{:?}", String::from_utf8_lossy(stream));
    }
    // CR then LF across two feeds is one line end; CR then anything else ends the line alone.
    let mut p = EventParser::new();
    let (events, _) = run(&mut p, &[b"data: a\r", b"\n", b"\r", b"data: b\r", b"\r"]);
    assert_eq!(events, vec![ev("", "a", ""), ev("", "b", "")]);
    // Had the LF after a feed's last CR been taken for a blank line, "a" would go out alone.
    let (events, _) = run(&mut EventParser::new(), &[b"data: a\r", b"\n", b"data: b\r", b"\n\r\n"]);
    assert_eq!(events, vec![ev("", "a\nb", "")]);
    // An empty feed between CR and LF must not forget the CR.
    let (events, _) = run(&mut EventParser::new(), &[b"data: a\r", b"", b"\n", b"data: b\n\n"]);
    assert_eq!(events, vec![ev("", "a\nb", "")]);
}

/// A stream with every feature, for the splitting tests.
const SAMPLE: &[u8] = b"\xEF\xBB\xBFretry: 500\r\n: hi\n\nid: 1\ndata: one\r\n\r\nevent: t\rdata: tw\rdata: o\r\r\
id: 3\r\ndata:three\r\n: c\ndata\n\ndata: \xC3\xA9\xFF\n\nevent: x\n\ndata: last\r";

#[test]
fn every_split_gives_the_same_events() {
    let mut whole = EventParser::new();
    let (want, err) = run(&mut whole, &[SAMPLE]);
    assert_eq!(err, None);
    assert_eq!(want.len(), 4);
    assert_eq!(want[1], ev("t", "tw\no", "1"));
    assert_eq!(want[2], ev("", "three\n", "3"));
    assert_eq!(want[3], (Vec::new(), b"\xC3\xA9\xFF".to_vec(), b"3".to_vec()));
    for i in 0..=SAMPLE.len() {
        for j in i..=SAMPLE.len() {
            let mut p = EventParser::new();
            let (got, err) = run(&mut p, &[&SAMPLE[..i], &SAMPLE[i..j], &SAMPLE[j..]]);
            assert_eq!((got, err), (want.clone(), None), "split at {i} and {j}");
            assert_eq!((p.last_id(), p.retry_ms(), p.comments()), (&b"3"[..], Some(500), 2));
            assert!(p.is_mid_event());
        }
    }
    let mut p = EventParser::new();
    let bytes: Vec<&[u8]> = SAMPLE.chunks(1).collect();
    assert_eq!(run(&mut p, &bytes), (want, None));
}

#[test]
fn openai_style_stream() {
    let stream = concat!(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,",
        "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        ": keep-alive\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    )
    .as_bytes();
    for cut in 0..=stream.len() {
        let mut p = EventParser::new();
        let (events, err) = run(&mut p, &[&stream[..cut], &stream[cut..]]);
        assert_eq!(err, None);
        assert_eq!(events.len(), 4);
        assert!(events.iter().all(|(t, _, id)| t.is_empty() && id.is_empty()));
        assert!(events[1].1.starts_with(b"{\"id\":\"chatcmpl-1\"") && events[1].1.ends_with(b"}]}"));
        assert_eq!(events[3].1, b"[DONE]");
        assert_eq!(p.comments(), 1);
    }
}

#[test]
fn too_long_line_fails_however_split() {
    let ok = b"data: 0123456789\n\n"; // the line is 16 bytes
    assert_eq!(run(&mut EventParser::with_limit(16), &[ok]), (vec![ev("", "0123456789", "")], None));
    let long = b"data: ok\n\ndata: 01234567890\n\ndata: never\n\n"; // the second line is 17
    for cut in 0..=long.len() {
        let mut p = EventParser::with_limit(16);
        let (events, err) = run(&mut p, &[&long[..cut], &long[cut..]]);
        assert_eq!(events, vec![ev("", "ok", "")], "cut at {cut}");
        assert_eq!(err, Some(TooLong { limit: 16 }), "cut at {cut}");
        // Failed for good: the next feed fails too, whatever it holds.
        assert_eq!(run(&mut p, &[b"data: x\n\n"]), (vec![], Some(TooLong { limit: 16 })));
        // A new response starts clean.
        p.restart();
        assert_eq!(run(&mut p, &[b"data: x\n\n"]), (vec![ev("", "x", "")], None));
    }
    // A line that never ends fails as soon as it passes the limit, holding no more than that.
    let mut p = EventParser::with_limit(1000);
    let chunk = [b'a'; 300];
    assert_eq!(run(&mut p, &[&chunk, &chunk, &chunk]), (vec![], None));
    assert_eq!(run(&mut p, &[&chunk]), (vec![], Some(TooLong { limit: 1000 })));
    assert!(p.line.is_empty());
    assert_eq!(TooLong { limit: 1000 }.to_string(), "an event-stream line or event is over the 1000 byte limit");
}

#[test]
fn too_much_data_in_one_event_fails() {
    let mut p = EventParser::with_limit(16);
    // Each line is short; together they pass the cap on one event's data.
    let (events, err) = run(&mut p, &[b"data: 12345\ndata: 12345\ndata: 12345\n\n"]);
    assert_eq!((events, err), (vec![], Some(TooLong { limit: 16 })));
    let mut p = EventParser::with_limit(16);
    let (events, err) = run(&mut p, &[b"data: 1234567\ndata: 1234567\n\n"]);
    assert_eq!((events, err), (vec![ev("", "1234567\n1234567", "")], None));
}

#[test]
fn bom_skipped_once_at_the_start() {
    assert_eq!(parse(b"\xEF\xBB\xBFdata: a\n\n"), vec![ev("", "a", "")]);
    let mut p = EventParser::new();
    let (events, _) = run(&mut p, &[b"\xEF", b"", b"\xBB", b"\xBF", b"data: a\n\n"]);
    assert_eq!(events, vec![ev("", "a", "")]);
    // Later, the same bytes are part of a field name ("\u{feff}data"), which means nothing.
    assert_eq!(run(&mut p, &[b"\xEF\xBB\xBFdata: b\n\n"]), (vec![], None));
    // A second BOM at the start is not skipped.
    assert_eq!(parse(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: c\n\ndata: d\n\n"), vec![ev("", "d", "")]);
    // Bytes that start like a BOM but are not one stay in the first line.
    let mut p = EventParser::new();
    assert_eq!(run(&mut p, &[b"\xEF\xBB", b"x\n", b"data: e\n\n"]), (vec![ev("", "e", "")], None));
    assert_eq!(parse(b"\xEF\n\xEF\xBB\xBFdata: f\n\ndata: g\n\n"), vec![ev("", "g", "")]);
    // No BOM at all; and a new response may open with one again.
    assert_eq!(parse(b"\ndata: h\n\n"), vec![ev("", "h", "")]);
    p.restart();
    assert_eq!(run(&mut p, &[b"\xEF\xBB\xBFdata: i\n\n"]), (vec![ev("", "i", "")], None));
}

#[test]
fn restart_keeps_id_retry_and_comments_and_drops_the_rest() {
    let mut p = EventParser::new();
    run(&mut p, &[b"retry: 250\n:c\nid: 9\nevent: t\ndata: lost\ndata: par"]);
    assert!(p.is_mid_event());
    p.restart();
    assert!(!p.is_mid_event());
    let (events, _) = run(&mut p, &[b"data: new\n\n"]);
    assert_eq!(events, vec![ev("", "new", "9")]);
    assert_eq!((p.retry_ms(), p.comments(), p.limit()), (Some(250), 1, DEFAULT_LIMIT));
    // A CR that ended the old response does not swallow a LF opening the new one.
    let mut p = EventParser::new();
    run(&mut p, &[b"data: a\r"]);
    p.restart();
    assert_eq!(run(&mut p, &[b"\ndata: b\n\n"]), (vec![ev("", "b", "")], None));
}

/// The spec's algorithm as plainly as possible, on the whole stream at once: the oracle for
/// the random tests. Line ends are normalised to LF first, and the unfinished last line dropped.
fn reference(stream: &[u8], limit: usize) -> (Vec<Owned>, bool, Vec<u8>, Option<u64>, u64) {
    let stream = stream.strip_prefix(&BOM[..]).unwrap_or(stream);
    let mut text = Vec::new();
    let mut i = 0;
    while i < stream.len() {
        match (stream[i], stream.get(i + 1)) {
            (b'\r', Some(b'\n')) => {
                text.push(b'\n');
                i += 2;
            }
            (b'\r', _) => {
                text.push(b'\n');
                i += 1;
            }
            (b, _) => {
                text.push(b);
                i += 1;
            }
        }
    }
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let unfinished = lines.pop().unwrap_or(&[]);
    let (mut events, mut data, mut kind, mut id, mut retry, mut comments) =
        (Vec::new(), Vec::<u8>::new(), Vec::new(), Vec::new(), None, 0);
    for line in lines {
        if line.len() > limit {
            return (events, true, id, retry, comments);
        }
        if line.is_empty() {
            if !data.is_empty() {
                events.push((kind.clone(), data[..data.len() - 1].to_vec(), id.clone()));
            }
            data.clear();
            kind.clear();
        } else if line[0] == b':' {
            comments += 1;
        } else {
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(c) => {
                    (&line[..c], if line.get(c + 1) == Some(&b' ') { &line[c + 2..] } else { &line[c + 1..] })
                }
                None => (line, &line[line.len()..]),
            };
            if name == b"data" {
                if data.len() + value.len() + 1 > limit {
                    return (events, true, id, retry, comments);
                }
                data.extend_from_slice(value);
                data.push(b'\n');
            } else if name == b"event" {
                kind = value.to_vec();
            } else if name == b"id" && !value.contains(&0) {
                id = value.to_vec();
            } else if name == b"retry" && !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                let s = std::str::from_utf8(value).unwrap();
                retry = Some(s.parse::<u64>().unwrap_or(u64::MAX));
            }
        }
    }
    let failed = unfinished.len() > limit;
    (events, failed, id, retry, comments)
}

/// xorshift64*: deterministic noise without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_streams_match_the_reference_however_split() {
    // Whole fields and blank lines are weighted in, or random bytes would rarely make an event.
    let pieces: Vec<&[u8]> = [
        &b"data|event|id|retry|:|: | |\r|\n|\r\n|\n\n|x|12|\0|\xEF\xBB\xBF|\xEF|\xBB|\xFF"[..],
        b"data: |id: |retry: 3|event: e|data: x\n|data:y\r\n|\n\n|\r\r|id: 4\n|: c\n",
    ]
    .iter()
    .flat_map(|group| group.split(|&b| b == b'|'))
    .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..3000 {
        let mut stream = Vec::new();
        for _ in 0..rng.below(80) {
            stream.extend_from_slice(pieces[rng.below(pieces.len())]);
        }
        let limit = [12, 48, DEFAULT_LIMIT, DEFAULT_LIMIT][rng.below(4)];
        let (want, failed, id, retry, comments) = reference(&stream, limit);
        let mut chunks = Vec::new();
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let n = rng.below(rest.len() + 1);
            chunks.push(&rest[..n]);
            rest = &rest[n..];
        }
        let mut p = EventParser::with_limit(limit);
        let (got, err) = run(&mut p, &chunks);
        let context = format!("round {round}: {:?} in {chunks:?}", String::from_utf8_lossy(&stream));
        assert_eq!(got, want, "{context}");
        assert_eq!(err.is_some(), failed, "{context}");
        if !failed {
            assert_eq!((p.last_id(), p.retry_ms(), p.comments()), (&id[..], retry, comments), "{context}");
        }
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for _ in 0..2000 {
        let mut p = EventParser::with_limit(1 + rng.below(64));
        for _ in 0..rng.below(8) {
            let chunk: Vec<u8> = (0..rng.below(100)).map(|_| rng.next() as u8).collect();
            let _ = p.feed(&chunk, |e: Event<'_>| assert!(e.data.len() <= 64));
            if rng.below(10) == 0 {
                p.restart();
            }
        }
    }
}
