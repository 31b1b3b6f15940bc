use rusqlite::{params, Connection, TransactionBehavior};
use std::time::Instant;
fn main() {
    let dir = std::env::temp_dir().join(format!("probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = Connection::open(dir.join("p.db")).unwrap();
    c.execute_batch(&std::env::var("PRAGMAS").unwrap_or_default()).unwrap();
    c.execute_batch("PRAGMA journal_mode=WAL;
    CREATE TABLE sessions(sid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
    CREATE TABLE entries(sid INTEGER NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, parent_id TEXT, type TEXT NOT NULL, target_id TEXT, payload TEXT NOT NULL, UNIQUE(sid,seq), UNIQUE(sid,id));
    CREATE INDEX e_parent ON entries(sid,parent_id); CREATE INDEX e_type ON entries(sid,type,seq); CREATE INDEX e_target ON entries(sid,target_id) WHERE target_id IS NOT NULL;
    CREATE TABLE session_state(sid INTEGER PRIMARY KEY, leaf_id TEXT, name TEXT, entry_count INTEGER NOT NULL, message_count INTEGER NOT NULL, cost REAL NOT NULL, updated_at TEXT);
    INSERT INTO sessions VALUES(1,'s'); INSERT INTO session_state VALUES(1,NULL,NULL,0,0,0,'x');").unwrap();
    let n: u64 = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000);
    let t = Instant::now();
    for i in 0..n {
        let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
        let (leaf, count): (Option<String>, i64) = tx.prepare_cached("SELECT leaf_id, entry_count FROM session_state WHERE sid=1").unwrap().query_row([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        let id = format!("{:08x}", rand_id(i));
        let exists: bool = tx.prepare_cached("SELECT EXISTS(SELECT 1 FROM entries WHERE sid=1 AND id=?1)").unwrap().query_row([&id], |r| r.get(0)).unwrap();
        assert!(!exists);
        let payload = format!(r#"{{"type":"custom","id":"{id}","parentId":{},"timestamp":"2026-06-20T15:00:00.000Z","customType":"bench","data":{{"i":{i}}}}}"#, leaf.as_ref().map(|l| format!("\"{l}\"")).unwrap_or("null".into()));
        tx.prepare_cached("INSERT INTO entries(sid,seq,id,parent_id,type,target_id,payload) VALUES(1,?1,?2,?3,'custom',NULL,?4)").unwrap().execute(params![count+1, id, leaf, payload]).unwrap();
        tx.prepare_cached("UPDATE session_state SET leaf_id=?1, entry_count=?2, updated_at=?3 WHERE sid=1").unwrap().execute(params![id, count+1, "2026"]).unwrap();
        tx.commit().unwrap();
    }
    let el = t.elapsed();
    println!("{} appends in {:?}: {:.0}/s", n, el, n as f64 / el.as_secs_f64());
    std::fs::remove_dir_all(&dir).ok();
}
fn rand_id(i: u64) -> u32 { (i.wrapping_mul(2654435761) ^ 0x9e3779b9) as u32 }
