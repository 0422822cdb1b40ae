//! The modelled service (`OriginConfig::service`) end to end: one worker shared by connections
//! on different threads, answers held until their worker is done, the stats page never held.

use super::*;

/// Asserts `took` is no less than `want` (the model's exact floor) and not much more.
fn around(what: &str, took: Duration, want: Duration) {
    assert!(took >= want && took < want + Duration::from_millis(150), "{what} answered after {took:?}, not {want:?}");
}

#[test]
fn one_worker_serves_connections_in_arrival_order_and_stats_at_once() {
    let t = Duration::from_millis(100);
    let service = Service { time: t, workers: 1, dist: ServiceDist::Fixed };
    let server = Server::start(OriginConfig { threads: 2, service: Some(service), ..OriginConfig::default() });
    let mut first = server.connect();
    let mut second = server.connect();
    let start = Instant::now();
    // Two pipelined requests, then one on another connection (likely another thread): three
    // services of T one after the other.
    first.write_all(&GET.repeat(2)).unwrap();
    thread::sleep(Duration::from_millis(20));
    second.write_all(GET).unwrap();

    let mut stats = server.connect();
    stats.write_all(b"GET /_strain/stats HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    let page = read_to_close(&mut stats);
    assert!(page.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(start.elapsed() < t, "the stats page waited for a worker");

    assert_eq!(read_exact(&mut first, OK.len()), OK);
    around("first", start.elapsed(), t);
    assert_eq!(read_exact(&mut first, OK.len()), OK);
    around("second", start.elapsed(), 2 * t);
    assert_eq!(read_exact(&mut second, OK.len()), OK);
    around("third", start.elapsed(), 3 * t);
    drop((first, second));
    assert_eq!(server.stop().requests, 3);
}

#[test]
fn zero_workers_or_time_are_refused_at_start() {
    for (time, workers) in [(Duration::ZERO, 1), (Duration::from_millis(1), 0)] {
        let service = Some(Service { time, workers, dist: ServiceDist::Exp });
        let config = OriginConfig { service, ..OriginConfig::default() };
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let result = run(listener, &config, &AtomicBool::new(false));
        assert!(matches!(result, Err(OriginError::Invalid(_))), "{time:?} x {workers}: {result:?}");
    }
}
