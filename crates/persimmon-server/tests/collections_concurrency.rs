//! Many clients on one large collection at once (issue 17): pushes and pops
//! of one list, writes to one hash and one sorted set, and readers walking
//! them, all in parallel. Every reply must be a success — a unit that read
//! pages another unit was changing runs again, it never reports the
//! mixture as damage — and the final state must be exactly what the
//! acknowledged commands add up to.

mod common;

use common::{cmd, int, TestServer};
use redis::Value;

const WRITERS: usize = 4;
const ROUNDS: usize = 1500;

fn len_of(v: Value) -> usize {
    match v {
        Value::Array(items) => items.len(),
        Value::Map(items) => items.len() * 2,
        v => panic!("{v:?}"),
    }
}

#[test]
fn writers_and_readers_of_one_large_collection_never_see_damage() {
    let server = TestServer::start_with(|c| c.pool_size = Some(256 << 20));
    let mut c = server.client();
    for chunk in (0..6000).collect::<Vec<u32>>().chunks(500) {
        let items: Vec<String> = chunk.iter().map(|i| format!("e{i}")).collect();
        let _: i64 = redis::cmd("RPUSH")
            .arg("l")
            .arg(&items)
            .query(&mut c)
            .unwrap();
        let pairs: Vec<String> = chunk
            .iter()
            .flat_map(|i| [format!("f{i}"), "v".into()])
            .collect();
        let _: i64 = redis::cmd("HSET")
            .arg("h")
            .arg(&pairs)
            .query(&mut c)
            .unwrap();
        let zs: Vec<String> = chunk
            .iter()
            .flat_map(|i| [i.to_string(), format!("m{i}")])
            .collect();
        let _: i64 = redis::cmd("ZADD").arg("z").arg(&zs).query(&mut c).unwrap();
    }
    let mut threads = Vec::new();
    for w in 0..WRITERS {
        let mut con = server.client();
        threads.push(std::thread::spawn(move || {
            let (mut pushed, mut popped) = (0i64, 0i64);
            for i in 0..ROUNDS {
                let x = format!("w{w}-{i}");
                if i % 2 == 0 {
                    int(&mut con, &["LPUSH", "l", &x]);
                    pushed += 1;
                } else if cmd(&mut con, &["RPOP", "l"]).unwrap() != Value::Nil {
                    popped += 1;
                }
                int(
                    &mut con,
                    &["HSET", "h", &format!("f{}", (i * 7 + w) % 9000), &x],
                );
                cmd(
                    &mut con,
                    &["ZINCRBY", "z", "1", &format!("m{}", (i * 13 + w) % 6000)],
                )
                .unwrap();
            }
            (pushed, popped)
        }));
    }
    let mut readers = Vec::new();
    for _ in 0..2 {
        let mut con = server.client();
        readers.push(std::thread::spawn(move || {
            for i in 0..300 {
                let at = (i * 37 % 5000).to_string();
                let end = (i * 37 % 5000 + 100).to_string();
                assert_eq!(
                    len_of(cmd(&mut con, &["LRANGE", "l", &at, &end]).unwrap()),
                    101
                );
                assert!(len_of(cmd(&mut con, &["ZRANGE", "z", &at, &end]).unwrap()) == 101);
                cmd(&mut con, &["ZRANK", "z", &format!("m{i}")]).unwrap();
                cmd(&mut con, &["HGET", "h", &format!("f{i}")]).unwrap();
            }
        }));
    }
    let (mut pushed, mut popped) = (0, 0);
    for t in threads {
        let (p, q) = t.join().expect("writer");
        pushed += p;
        popped += q;
    }
    for r in readers {
        r.join().expect("reader");
    }
    assert_eq!(int(&mut c, &["LLEN", "l"]), 6000 + pushed - popped);
    assert_eq!(int(&mut c, &["ZCARD", "z"]), 6000);
    let total: f64 = match cmd(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]).unwrap() {
        Value::Array(items) => items
            .chunks(2)
            .map(|p| match &p[1] {
                Value::BulkString(b) => String::from_utf8_lossy(b).parse::<f64>().unwrap(),
                v => panic!("{v:?}"),
            })
            .sum(),
        v => panic!("{v:?}"),
    };
    let initial: f64 = (0..6000).map(f64::from).sum();
    assert_eq!(
        total,
        initial + (WRITERS * ROUNDS) as f64,
        "every ZINCRBY counted once"
    );
    assert!(int(&mut c, &["HLEN", "h"]) >= 6000);
}
