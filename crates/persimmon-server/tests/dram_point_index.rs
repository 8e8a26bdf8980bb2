//! A server whose pool keeps its point index in DRAM (`point-index =
//! "dram"`, with the ordered index): INFO and CONFIG GET report the
//! placement, point reads and KRANGE work, and after a restart the pool
//! keeps its placement and its keys; a pool with the PM point index reports
//! `pm`; DRAM without the ordered index is refused when the pool is made.

mod common;

use common::TestServer;
use persimmon::PointIndex;
use redis::Commands;

fn info(con: &mut redis::Connection) -> String {
    redis::cmd("INFO").arg("persistence").query(con).unwrap()
}

fn config_get(con: &mut redis::Connection, name: &str) -> Vec<String> {
    redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query(con)
        .unwrap()
}

/// The value of `field` in INFO text.
fn field<'a>(info: &'a str, field: &str) -> &'a str {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .trim_end()
}

#[test]
fn a_dram_point_index_is_reported_and_survives_a_restart() {
    let mut server = TestServer::start_with(|c| {
        c.ordered_index = true;
        c.point_index = PointIndex::Dram;
    });
    let mut con = server.client();
    for i in 0..500 {
        let _: () = con.set(format!("k{i:03}"), i).unwrap();
    }
    assert_eq!(con.get::<_, i64>("k042").unwrap(), 42);
    assert_eq!(config_get(&mut con, "point-index"), ["point-index", "dram"]);
    assert_eq!(
        config_get(&mut con, "*-index"),
        ["ordered-index", "yes", "point-index", "dram"]
    );
    let text = info(&mut con);
    assert_eq!(field(&text, "point_index"), "dram", "{text}");
    assert_eq!(field(&text, "point_index_ready"), "1", "{text}");
    assert!(
        field(&text, "dram_index_bytes").parse::<u64>().unwrap() > 0,
        "{text}"
    );
    drop(con);
    server.stop();

    // Reopened without asking for it: the pool's own placement applies.
    let mut con = server.restart();
    // Served at once, before or after the rebuild in DRAM is done.
    for i in (0..500).step_by(7) {
        assert_eq!(con.get::<_, i64>(format!("k{i:03}")).unwrap(), i);
    }
    let keys: Vec<String> = redis::cmd("KPREFIX").arg("k49").query(&mut con).unwrap();
    assert_eq!(
        keys,
        (490..500).map(|i| format!("k{i}")).collect::<Vec<_>>()
    );
    assert_eq!(config_get(&mut con, "point-index"), ["point-index", "dram"]);
    let text = info(&mut con);
    assert_eq!(field(&text, "point_index"), "dram", "{text}");
    drop(con);
    server.stop();
}

#[test]
fn a_pm_point_index_is_reported_as_pm() {
    let server = TestServer::start_with(|c| c.ordered_index = true);
    let mut con = server.client();
    let _: () = con.set("a", "1").unwrap();
    assert_eq!(config_get(&mut con, "point-index"), ["point-index", "pm"]);
    let text = info(&mut con);
    assert_eq!(field(&text, "point_index"), "pm", "{text}");
    assert_eq!(field(&text, "point_index_ready"), "1", "{text}");
    assert_eq!(field(&text, "dram_index_bytes"), "0", "{text}");
}

#[test]
fn dram_without_the_ordered_index_is_refused_at_creation() {
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let pool = dir.path().join("x.pool");
    let e = persimmon_server::ServerHandle::start(persimmon_server::Config {
        pool: pool.clone(),
        port: 0,
        point_index: PointIndex::Dram,
        ..Default::default()
    })
    .err()
    .expect("refused");
    let e = e.to_string();
    assert!(e.contains("ordered index"), "{e}");
    assert!(!pool.exists());
}
