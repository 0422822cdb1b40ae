//! The response parser under fuzzing: [`ResponseParser`] driven as the engine drives it,
//! compared with the reference on every way of cutting the input into reads.

use std::time::Instant;

use super::reference::{self, Response};
use super::{ending_agrees, gen, long_run, report, run, splits, Case, Ended, Tally, SHORT_RUN};
use crate::http::response::{ResponseParser, MAX_CAPTURED_BODY};
use crate::http::{ParseError, MAX_HEAD_BYTES};

/// What the parser reported for one way of feeding an input.
#[derive(Debug)]
struct Seen {
    responses: Vec<Response>,
    ended: Ended,
    error: Option<ParseError>,
}

/// Feeds `input` in reads of the lengths in `pieces`, as the engine does: each read until it
/// is used up, stopping after a response that closes the connection; then the peer closes.
/// With `capture`, fields and bodies are kept and compared too.
fn drive(input: &[u8], pieces: &[usize], head: bool, capture: bool, tally: &mut Tally) -> Result<Seen, String> {
    let mut p = ResponseParser::new();
    p.set_head_request(head);
    p.set_capture(capture);
    let mut seen = Seen { responses: Vec::new(), ended: Ended::Clean, error: None };
    let mut at = 0;
    for &len in pieces {
        let mut data = &input[at..at + len];
        while !data.is_empty() {
            tally.feeds += 1;
            let fed = match p.feed(data) {
                Ok(fed) => fed,
                Err(e) => {
                    seen.ended = Ended::Error;
                    seen.error = Some(e);
                    return Ok(seen);
                }
            };
            if fed.used == 0 || fed.used > data.len() {
                return Err(format!("feed of {} bytes used {}", data.len(), fed.used));
            }
            // Between reads the parser holds at most a head and a kept response.
            let bound = MAX_HEAD_BYTES + 2 * MAX_HEAD_BYTES + MAX_CAPTURED_BODY + len;
            if p.held_bytes() > bound {
                return Err(format!("holds {} bytes", p.held_bytes()));
            }
            at += fed.used;
            data = &data[fed.used..];
            if let Some(done) = fed.complete {
                seen.responses.push(seen_response(&p, done.status, done.keep_alive, at, capture));
                if !done.keep_alive {
                    return Ok(seen);
                }
            }
        }
    }
    if let Some(done) = p.finish_on_close() {
        seen.responses.push(seen_response(&p, done.status, done.keep_alive, at, capture));
    } else if !p.is_idle() {
        seen.ended = Ended::Partial;
    }
    Ok(seen)
}

/// A completed response in the reference's terms (fields and body only when kept).
fn seen_response(p: &ResponseParser, status: u16, keep_alive: bool, end: usize, capture: bool) -> Response {
    let (fields, body) = match p.captured().filter(|_| capture) {
        Some(c) => (c.headers.clone(), c.body.clone()),
        None => (Vec::new(), Vec::new()),
    };
    Response { status, keep_alive, end, fields, body }
}

/// Checks one input against the reference, fed every way.
fn check(case: Case, tally: &mut Tally) -> Result<(), String> {
    let Case { mut rng, bytes } = case;
    let head = rng.chance(0.1);
    let (want, end) = reference::responses(&bytes, head);
    tally.verdict(end);
    for (way, pieces) in splits(&mut rng, bytes.len()).iter().enumerate() {
        // Keep fields and bodies when fed byte by byte and in random pieces.
        let capture = way % 2 == 1;
        let seen = drive(&bytes, pieces, head, capture, tally)?;
        let got: Vec<Response> = seen.responses;
        let expected: Vec<Response> = want
            .iter()
            .map(|r| if capture { r.clone() } else { Response { fields: Vec::new(), body: Vec::new(), ..r.clone() } })
            .collect();
        if got != expected || !ending_agrees(seen.ended, end) {
            return Err(format!(
                "fed as {} pieces (HEAD {head}): got {got:?} ending {:?} {:?}; the reference says {expected:?} ending {end:?}",
                pieces.len(),
                seen.ended,
                seen.error
            ));
        }
    }
    Ok(())
}

#[test]
fn response_parser_agrees_with_the_reference_on_seeded_inputs() {
    run("response", 7, 0..SHORT_RUN, gen::responses, check);
}

#[test]
#[ignore = "the long run: scripts/fuzz.sh"]
fn response_parser_long_run() {
    let (indices, seed) = long_run();
    let started = Instant::now();
    let tally = run("response", seed, indices, gen::responses, check);
    report("response parser", seed, &tally, started.elapsed());
}
