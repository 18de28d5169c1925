//! The wire's fields as `analyze` writes them (`--pairs`, `--unmatched`, the `--by symbol` rows of the
//! JSON report and the table): every byte read back as the wire holds it, by Python's `csv` module and
//! `codecs.escape_decode` (an oracle apart from the code under test), right padding (spaces, NULs)
//! trimmed but from a field of padding only.

use std::path::Path;
use wirestamp_lab::encode::ouch;

mod support;
use support::{T0, aapl_order, conversation, soup_packet, symbol_tick, tmpdir, write_pcap};

const FEED_A: &str = "udp:233.54.12.111:26477";

/// A field's bytes as the README says they are written: without their right padding (spaces or
/// NULs), whole when padding only.
fn trimmed(b: &[u8]) -> &[u8] {
    match b.iter().rposition(|&c| c != b' ' && c != 0) {
        Some(i) => &b[..=i],
        None => b,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The lines Python program `py` prints given `paths`, sorted.
fn python_lines(py: &str, paths: &[&Path]) -> Vec<String> {
    let out = std::process::Command::new("python3")
        .args(["-c", py])
        .args(paths)
        .output()
        .expect("python3 (scripts/setup.sh installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// Each row of each CSV file in `paths`, as Python's `csv` module reads it: its `order_frame`, then the
/// bytes `codecs.escape_decode` gives of its `order_id`, `token` and (`--unmatched`) `symbol`, in
/// hex, joined by `:`; sorted.
fn decoded_by_python(paths: &[&Path]) -> Vec<String> {
    let py = "import codecs, csv, sys\n\
              for path in sys.argv[1:]:\n\
              \x20   rows = list(csv.reader(open(path, newline='')))\n\
              \x20   head = rows[0]\n\
              \x20   cols = [head.index(c) for c in ('order_id', 'token', 'symbol') if c in head]\n\
              \x20   for row in rows[1:]:\n\
              \x20       dec = [codecs.escape_decode(row[c].encode('ascii'))[0].hex() for c in cols]\n\
              \x20       print(':'.join([row[head.index('order_frame')]] + dec))\n";
    python_lines(py, paths)
}

/// An Enter Order packet: UserRefNum (OUCH 5.0), order token or ClOrdID, symbol.
type Enter = fn(u32, &[u8; 14], &[u8; 8]) -> Vec<u8>;

/// An OUCH 4.2 Enter Order of `token` and `symbol` (it has no UserRefNum).
fn enter42(_: u32, token: &[u8; 14], symbol: &[u8; 8]) -> Vec<u8> {
    support::enter42_of(token, symbol)
}

/// An OUCH 5.0 Enter Order (UserRefNum `n`) whose ClOrdID and symbol are the bytes given, any bytes
/// (OUCH 5.0 §2.1: symbol at offset 10, ClOrdID at 31).
fn enter50(n: u32, cl_ord_id: &[u8; 14], symbol: &[u8; 8]) -> Vec<u8> {
    let mut m = Vec::new();
    ouch::enter_order(&mut m, &aapl_order(n));
    m[10..18].copy_from_slice(symbol);
    m[31..45].copy_from_slice(cl_ord_id);
    soup_packet(b'U', &m)
}

/// `head`, `b` and `tail`, padded with spaces to `N` bytes (`b` last when `head` fills the rest).
fn field<const N: usize>(head: &[u8], b: u8, tail: &[u8]) -> [u8; N] {
    let mut f = [b' '; N];
    let bytes: Vec<u8> = head.iter().copied().chain([b]).chain(tail.iter().copied()).collect();
    f[..bytes.len()].copy_from_slice(&bytes);
    f
}

/// Every byte 0x00 to 0xFF in every field that carries the wire's bytes (OUCH 4.2's order token,
/// written as `order_id` and `token`; OUCH 5.0's ClOrdID, written as `token`; either's symbol), inside
/// a field (`P` b `Q`) and as its last byte (where a space or a NUL is padding): Python's `csv`
/// module reads `--pairs` and `--unmatched`, and `codecs.escape_decode` gives back each field's bytes
/// as the wire holds them, right padding trimmed; a field of padding only, spaces and NULs mixed, is
/// given back whole. Under the symbol rule, one AAPL tick at T0 (frame 0), then orders 1 ms apart:
/// 514 AAPL orders (each byte inside the token, then as its last byte, then a token of mixed padding)
/// pair with the tick (within the 1 s window); 514 more, of symbols no tick has (the byte inside the
/// token and the symbol, then last in both, then both of mixed padding), are `--unmatched` rows.
/// Both files hold printable ASCII and line feeds only.
#[test]
fn every_byte_of_every_field_reads_back_as_the_wire_holds_it() {
    let dir = tmpdir("wire-text-every-byte");
    let (cap, pairs, unmatched) = (dir.join("c.pcap"), dir.join("p.csv"), dir.join("u.csv"));
    let mixed14: [u8; 14] = *b" \0 \0\0  \0 \0 \0\0 ";
    let mixed8: [u8; 8] = *b"\0 \0  \0\0 ";
    let versions: [(&str, Enter); 2] = [("tcp:10.1.0.1:8003@ouch42", enter42), ("tcp:10.1.0.1:8003@ouch50", enter50)];
    for (session, enter) in versions {
        // (token, symbol) of each order, in frame order from frame 1.
        let mut orders: Vec<([u8; 14], [u8; 8])> = Vec::new();
        orders.extend((0..=255).map(|b| (field(b"P", b, b"Q"), *b"AAPL    ")));
        orders.extend((0..=255).map(|b| (field(b"PPPPPPPPPPPPP", b, b""), *b"AAPL    ")));
        orders.push((mixed14, *b"AAPL    "));
        let paired = orders.len();
        orders.extend((0..=255).map(|b| (field(b"U", b, b"V"), field(b"S", b, b"Z"))));
        orders.extend((0..=255).map(|b| (field(b"UUUUUUUUUUUUU", b, b""), field(b"SSSSSSS", b, b""))));
        orders.push((*b"\0 \0 \0 \0 \0 \0 \0 ", mixed8));
        let script: Vec<(i64, bool, Vec<u8>)> =
            orders.iter().zip(1u32..).map(|((t, s), n)| (i64::from(n), true, enter(n, t, s))).collect();
        let mut frames = conversation(&script);
        frames.insert(0, (T0, symbol_tick(1, "AAPL")));
        write_pcap(&cap, &frames);
        let args = ["--md", FEED_A, "--orders", session, "--pairs", pairs.to_str().unwrap()];
        let args: Vec<&str> = args.into_iter().chain(["--unmatched", unmatched.to_str().unwrap()]).collect();
        let r = support::analyze_json(&args, &cap);
        assert_eq!([&r["counters"]["orders"], &r["counters"]["matched"]], [orders.len(), paired], "{session}");
        let ouch42 = session.ends_with("ouch42");
        let mut want: Vec<String> = orders
            .iter()
            .zip(1u32..)
            .map(|((t, s), n)| {
                let id = if ouch42 { hex(trimmed(t)) } else { hex(n.to_string().as_bytes()) };
                match n as usize <= paired {
                    true => format!("{n}:{id}:{}", hex(trimmed(t))),
                    false => format!("{n}:{id}:{}:{}", hex(trimmed(t)), hex(trimmed(s))),
                }
            })
            .collect();
        want.sort();
        assert_eq!(decoded_by_python(&[&pairs, &unmatched]), want, "{session}");
        for f in [&pairs, &unmatched] {
            let bytes = std::fs::read(f).unwrap();
            assert!(bytes.iter().all(|&b| b == b'\n' || (0x20..0x7f).contains(&b)), "{}", f.display());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `--by symbol` rows of the JSON report, read by Python's `json` module: `blank` for
/// `symbol:(blank)`, the name itself for a row of no one symbol (`symbol:(others)`,
/// `symbol:(unknown)`), else the bytes `codecs.escape_decode` gives of the name after `symbol:`, in
/// hex; each with its count, joined by `:`; sorted.
fn symbol_rows_by_python(report: &Path) -> Vec<String> {
    let py = "import codecs, json, sys\n\
              m = [m for m in json.load(open(sys.argv[1]))['metrics'] if m['name'] == 'tick_to_trade'][0]\n\
              for d in m['dims']:\n\
              \x20   name = d['name']\n\
              \x20   if not name.startswith('symbol:'):\n\
              \x20       continue\n\
              \x20   if name == 'symbol:(blank)':\n\
              \x20       key = 'blank'\n\
              \x20   elif name.startswith('symbol:('):\n\
              \x20       key = name\n\
              \x20   else:\n\
              \x20       key = codecs.escape_decode(name[7:].encode('ascii'))[0].hex()\n\
              \x20   print(key + ':' + str(d['count']))\n";
    python_lines(py, &[report])
}

/// `--by symbol` gives each symbol's text a row of its own, named as `--unmatched` writes a symbol
/// (escaped, right padding trimmed): Python's `codecs.escape_decode` gives back each row's symbol, and
/// the table names the rows as the JSON does. A blank symbol (8 spaces, 8 NULs) is `symbol:(blank)`;
/// a symbol that reads `(blank)` or `(others)` has a row of its own, not that of blank symbols or of
/// the symbols beyond 1,024 (its `(` written `\x28`: no symbol's row is named as those are). Under
/// the token rule, OUCH 4.2 orders `T` and n (n from 1), 1 ms apart, each paired with AAPL tick n
/// (all at T0), of symbols: `S` b `Z` for every byte b, `SSSSSSS` b (the same text for b a space
/// or a NUL: one row of 2), `(blank)`, `(others)`, 8 spaces and 8 NULs (one row of 2).
#[test]
fn each_symbol_has_a_row_named_as_the_wire_holds_it() {
    let dir = tmpdir("wire-text-symbol-rows");
    let (cap, json) = (dir.join("c.pcap"), dir.join("r.json"));
    let mut symbols: Vec<[u8; 8]> = Vec::new();
    symbols.extend((0..=255).map(|b| field(b"S", b, b"Z")));
    symbols.extend((0..=255).map(|b| field(b"SSSSSSS", b, b"")));
    symbols.extend([*b"(blank) ", *b"(others)", *b"        ", [0; 8]]);
    let script: Vec<(i64, bool, Vec<u8>)> = symbols
        .iter()
        .zip(1u64..)
        .map(|(s, n)| (n as i64, true, support::enter42_of(&field(b"T", b'0', format!("{n}").as_bytes()), s)))
        .collect();
    let mut frames = conversation(&script);
    frames.splice(0..0, (1..=symbols.len() as u64).map(|n| (T0, symbol_tick(n, "AAPL"))));
    write_pcap(&cap, &frames);
    let args = ["--md", FEED_A, "--orders", "tcp:10.1.0.1:8003@ouch42", "--by", "symbol", "--match", r"token:T(\d+)"];
    let r = support::analyze_json(&args, &cap);
    assert_eq!(r["counters"]["matched"], symbols.len(), "{}", r["counters"]);
    std::fs::write(&json, serde_json::to_vec(&r).unwrap()).unwrap();
    let mut want = std::collections::BTreeMap::new();
    for s in &symbols {
        let key = match trimmed(s) {
            t if t.iter().all(|&c| c == b' ' || c == 0) => "blank".to_owned(),
            t => hex(t),
        };
        *want.entry(key).or_insert(0) += 1;
    }
    let mut want: Vec<String> = want.into_iter().map(|(k, n)| format!("{k}:{n}")).collect();
    want.sort();
    assert_eq!(symbol_rows_by_python(&json), want);
    // The table names each row as the JSON does (its name column 44 characters wide).
    let text = support::analyze_text(&args, &cap);
    for (name, _) in support::dims(support::metric(&r, "tick_to_trade")) {
        let line = format!("{:<44} ", format!("  {name}"));
        assert!(text.lines().any(|l| l.starts_with(&line)), "{line:?} in\n{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The token rule reads the token's bytes as the wire holds them, not the escaped text the files
/// show. OUCH 4.2, AAPL ticks 5 and 15 at T0, then orders 1 ms apart: `Q` NUL `5` under
/// `token:\x00(\d+)` reads 5 (its text `Q\x005` holds no NUL) and pairs with tick 5; `Q` 0x01 `5`
/// under `token:x(\d+)` reads nothing (its text `Q\x015` would give 15): `no_token`.
#[test]
fn the_token_rule_reads_the_wire_not_the_text() {
    let dir = tmpdir("wire-text-token-rule");
    let (cap, pairs) = (dir.join("c.pcap"), dir.join("p.csv"));
    for (b, rule, matched) in [(0, r"token:\x00(\d+)", 1), (1, r"token:x(\d+)", 0)] {
        let script = [(1, true, support::enter42_of(&field(b"Q", b, b"5"), b"AAPL    "))];
        let mut frames = conversation(&script);
        frames.splice(0..0, [(T0, symbol_tick(5, "AAPL")), (T0, symbol_tick(15, "AAPL"))]);
        write_pcap(&cap, &frames);
        let args = ["--md", FEED_A, "--orders", "tcp:10.1.0.1:8003@ouch42", "--match", rule];
        let args: Vec<&str> = args.into_iter().chain(["--pairs", pairs.to_str().unwrap()]).collect();
        let r = support::analyze_json(&args, &cap);
        let c = |k: &str| r["counters"].get(k).map_or(0, |v| v.as_u64().unwrap());
        assert_eq!([c("orders"), c("matched"), c("no_token")], [1, matched, 1 - matched], "{rule}: {}", r["counters"]);
        let text = std::fs::read_to_string(&pairs).unwrap();
        let tick_seq = text.lines().nth(1).map(|l| l.split(',').nth(1).unwrap().to_owned());
        assert_eq!(tick_seq, (matched == 1).then(|| "5".to_owned()), "{rule}: {text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
