//! A live server fed random bytes on many connections, some starting like
//! a real request and then going wrong: whatever it replies to them, it
//! still serves the next client. (The parser's own properties on random
//! bytes: `persimmon-resp`'s `parser_random_bytes.rs`.)

mod common;

#[test]
fn a_live_server_survives_garbage_on_many_connections() {
    use rand::{Rng, SeedableRng};
    let server = common::TestServer::start();
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    for round in 0..200 {
        let mut raw = server.raw();
        let len = rng.gen_range(1..4096);
        let mut garbage: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if round % 2 == 0 {
            // Start like a real request, then go wrong.
            let mut start = common::encode(&[b"SET", b"k", b"v"]);
            start.extend_from_slice(b"*3\r\n$3\r\n");
            start.append(&mut garbage);
            garbage = start;
        }
        let _ = raw.send(&garbage);
        // Whatever it replied, the server is still there for others.
        let mut other = server.raw();
        assert_eq!(
            other.command(&[b"PING"]),
            common::Resp::Simple("PONG".into())
        );
    }
}
