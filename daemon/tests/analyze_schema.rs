//! `wirestamp analyze --json` against its schema as README.md documents it (the key sets are parsed
//! from the README's example document, so README and output cannot drift apart in either direction),
//! and its tick-to-trade figures against synth's truth: count, min, max, mean, and which percentiles
//! are marked unstable (in the document and in the terminal table).

use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

mod support;

use support::{analyze_json, analyze_text, metric, synth_pcap, tmpdir};

/// The README's heading of the schema section.
const SCHEMA_HEADING: &str = "### `analyze --json`: the report schema";

/// The schema section of README.md: from its heading to the next heading.
fn schema_section() -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let start = readme.find(SCHEMA_HEADING).expect("README has the --json schema section");
    let rest = &readme[start + SCHEMA_HEADING.len()..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// The example document of the schema section (its first ```json block), parsed.
fn schema_example(section: &str) -> Value {
    let open = section.find("```json\n").expect("a json block in the schema section") + "```json\n".len();
    let len = section[open..].find("```").expect("the json block closes");
    serde_json::from_str(&section[open..open + len]).expect("the README's example document is JSON")
}

fn keys(o: &Map<String, Value>) -> BTreeSet<String> {
    o.keys().cloned().collect()
}

/// What the README documents for a metric and a dimension: (keys always present, keys present only
/// in a metric or dimension with samples).
struct MetricSchema {
    always: BTreeSet<String>,
    with_samples: BTreeSet<String>,
    dim_always: BTreeSet<String>,
}

fn metric_schema(section: &str, example: &Value) -> MetricSchema {
    let m = example["metrics"][0].as_object().expect("an example metric");
    let mut all = keys(m);
    // Keys the prose says appear only with samples: "`KEY` (a metric or dimension with samples)".
    let marker = "` (a metric or dimension with samples)";
    let mut with_samples = BTreeSet::new();
    for (i, _) in section.match_indices(marker) {
        let key = &section[section[..i].rfind('`').unwrap() + 1..i];
        assert!(all.contains(key), "README's prose names `{key}`, which its example metric lacks");
        with_samples.insert(key.to_owned());
    }
    all.retain(|k| !with_samples.contains(k));
    // The example dimension spells out a few keys and says "...": "same fields" (as the metric).
    let d = example["metrics"][0]["dims"][0].as_object().expect("an example dimension");
    let mut dim_always = keys(d);
    if d.get("...").and_then(Value::as_str) == Some("same fields") {
        dim_always.remove("...");
        dim_always.extend(all.iter().cloned());
    }
    MetricSchema { always: all, with_samples, dim_always }
}

/// `o` (a metric or a dimension) has exactly the documented keys; its `_ns` figures are integers with
/// samples and null without (README: "Values are integer ns; `null` without samples").
fn check_keys(what: &str, o: &Value, always: &BTreeSet<String>, with_samples: &BTreeSet<String>) {
    let o = o.as_object().unwrap();
    let count = o["count"].as_u64().unwrap();
    let mut expect = always.clone();
    if count > 0 {
        expect.extend(with_samples.iter().cloned());
    }
    assert_eq!(keys(o), expect, "{what} ({count} samples): keys differ from README's schema");
    for (k, v) in o {
        if k.ends_with("_ns") {
            assert_eq!(v.is_i64(), count > 0, "{what}.{k} = {v} with {count} samples");
            assert_eq!(v.is_null(), count == 0, "{what}.{k} = {v} with {count} samples");
        }
    }
}

/// The keys the README says are present only when not 0: those its paragraphs ending "are present
/// only when not 0" name (`feeds[].KEY`, `counters.KEY` or `KEY`), each of which its example shows.
fn only_when_not_zero(section: &str) -> BTreeSet<String> {
    let ends: Vec<usize> = section.match_indices("are present only when not 0").map(|(i, _)| i).collect();
    assert!(!ends.is_empty(), "README says which keys are present only when not 0");
    ends.into_iter()
        .flat_map(|to| {
            let from = section[..to].rfind("\n- ").unwrap();
            section[from..to].split('`').skip(1).step_by(2)
        })
        .map(|t| t.rsplit('.').next().unwrap())
        .filter(|t| t.chars().all(|c| c.is_ascii_lowercase() || c == '_') && t.contains('_'))
        .inspect(|k| assert!(section.contains(&format!("\"{k}\": 0")), "README's example lacks `{k}`"))
        .map(str::to_owned)
        .collect()
}

/// The `input` keys the README says are present only when not empty: those its sentence ending
/// "present only when not empty" names in backticks, each of which its example's `input` shows.
fn input_only_when_not_empty(section: &str, input: &Map<String, Value>) -> BTreeSet<String> {
    let to = section
        .find("are present only when not empty")
        .expect("README says which keys are present only when not empty");
    let from = section[..to].rfind('.').unwrap();
    let named: BTreeSet<String> = section[from..to].split('`').skip(1).step_by(2).map(str::to_owned).collect();
    for k in &named {
        assert!(input.contains_key(k), "README's example input lacks `{k}`");
    }
    named
}

/// The six metric names the README lists, in its order: the backticked plain names between "always
/// the six, in this order:" and "the last two only with".
fn documented_metric_names(section: &str) -> Vec<String> {
    let from = section.find("always the six, in this order:").expect("README lists the metrics");
    let to = from + section[from..].find("the last two only with").unwrap();
    section[from..to]
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn json_keys_are_the_readmes() {
    let section = schema_section();
    let example = schema_example(&section);
    let schema = metric_schema(&section, &example);
    // The README's example shows the figures every metric has: guard against parsing nothing.
    for k in ["name", "count", "min_ns", "p50_ns", "p99_99_ns", "max_ns", "mean_ns", "unstable", "dims"] {
        assert!(schema.always.contains(k), "README's example metric lacks {k}");
    }
    assert_eq!(schema.with_samples, BTreeSet::from(["clocks".to_owned()]));
    let mut counters = keys(example["counters"].as_object().unwrap());
    assert!(counters.len() > 30 && counters.contains("matched") && counters.contains("ts_sources"));
    // A capture without frames captured short has none of the keys that count them.
    let when_not_zero = only_when_not_zero(&section);
    assert!(when_not_zero.contains("frames_captured_short"), "{when_not_zero:?}");
    assert!(when_not_zero.contains("late_responses"), "{when_not_zero:?}");
    counters.retain(|k| !when_not_zero.contains(k));
    let top = keys(example.as_object().unwrap());
    // `input`: a whole capture's has none of the keys that name cut files, unknown losses or records
    // without a frame (its JSON as it was before they came).
    let input = example["input"].as_object().unwrap();
    let when_not_empty = input_only_when_not_empty(&section, input);
    assert_eq!(
        when_not_empty,
        BTreeSet::from(["cut_short".to_owned(), "losses_unknown".to_owned(), "records_without_frame".to_owned()])
    );
    let mut input_keys = keys(input);
    input_keys.retain(|k| !when_not_empty.contains(k));
    let names = documented_metric_names(&section);
    assert_eq!(names.len(), 6, "{names:?}");

    let dir = tmpdir("schema-keys");
    let cap = synth_pcap(&dir, "s.pcap", 4_000);
    for args in [&[][..], &["--by", "symbol"][..]] {
        let r = analyze_json(args, &cap);
        let got: Vec<&str> = r["metrics"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(got, names, "{args:?}: metrics and their order");
        let mut dims = 0;
        for m in r["metrics"].as_array().unwrap() {
            let name = m["name"].as_str().unwrap();
            check_keys(name, m, &schema.always, &schema.with_samples);
            for d in m["dims"].as_array().unwrap() {
                check_keys(&format!("{name} {}", d["name"]), d, &schema.dim_always, &schema.with_samples);
                dims += 1;
            }
        }
        // Both kinds are covered: metrics with samples (and dims) and metrics without (the TX ones).
        assert!(dims >= 6, "{args:?}: {dims} dimensions");
        assert_eq!(metric(&r, "tick_to_snd")["count"], 0);
        assert!(metric(&r, "tick_to_trade")["count"].as_u64().unwrap() > 100);
        let symbols = metric(&r, "tick_to_trade")["dims"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["name"].as_str().unwrap().starts_with("symbol:"))
            .count();
        assert_eq!(symbols > 0, !args.is_empty(), "{args:?}: symbol dimensions");
        // Those present only when not 0 are here when they count something (the symbol rule's
        // earlier ticks do on synth's capture), never as 0.
        let got = r["counters"].as_object().unwrap();
        let mut expect = counters.clone();
        for k in &when_not_zero {
            if let Some(v) = got.get(k) {
                assert_ne!(v, 0, "{args:?}: {k} is present only when not 0");
                expect.insert(k.clone());
            }
        }
        assert_eq!(keys(got), expect, "{args:?}: counters differ from README's");
        assert_eq!(keys(r.as_object().unwrap()), top, "{args:?}: the document's keys differ from README's");
        assert_eq!(keys(r["input"].as_object().unwrap()), input_keys, "{args:?}: input's keys differ from README's");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The percentiles the report gives, as (label, parts per ten thousand).
const PERCENTILES: [(&str, u64); 5] =
    [("p50", 5_000), ("p90", 9_000), ("p99", 9_900), ("p99.9", 9_990), ("p99.99", 9_999)];

/// The labels of the percentiles with fewer than 100 samples beyond them among `n` (README: "`unstable`
/// lists the percentiles with fewer than 100 samples beyond them"). A percentile q of n samples is the
/// sample of rank ceil(q × n) (nearest rank, 1-based); the samples beyond it are the n − rank above
/// that rank. (measurement.md's example agrees: p99.9 needs 100,000 samples, 100,000 − 99,900 = 100.)
fn unstable_labels(n: u64) -> Vec<&'static str> {
    PERCENTILES.iter().filter(|&&(_, q)| n - (q * n).div_ceil(10_000) < 100).map(|&(l, _)| l).collect()
}

/// The latencies of synth's truth beside `cap` (FILE.truth.csv), by the column its header names.
fn truth_latencies(cap: &Path) -> Vec<i64> {
    let mut p = cap.as_os_str().to_owned();
    p.push(".truth.csv");
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let col = lines.next().unwrap().split(',').position(|h| h == "latency_ns").expect("a latency_ns column");
    lines.map(|l| l.split(',').nth(col).unwrap().parse().unwrap()).collect()
}

#[test]
fn tick_to_trade_agrees_with_the_truth_and_marks_thin_tails() {
    let dir = tmpdir("schema-truth");
    // 40,000 packets at synth's default order probability (0.05): about 2,000 pairs, so that p50 and
    // p90 have 100 samples beyond them and p99 and above do not.
    let cap = synth_pcap(&dir, "s.pcap", 40_000);
    let lat = truth_latencies(&cap);
    let n = lat.len() as u64;
    assert!((1_000..100_000).contains(&n), "{n} pairs");
    let expect_unstable = unstable_labels(n);
    assert!(!expect_unstable.is_empty() && expect_unstable.len() < PERCENTILES.len(), "{expect_unstable:?}");

    let token = ["--match", r"token:T(\d+)"];
    let r = analyze_json(&token, &cap);
    let t = metric(&r, "tick_to_trade");
    assert_eq!(t["count"], n);
    assert_eq!(t["min_ns"], *lat.iter().min().unwrap());
    assert_eq!(t["max_ns"], *lat.iter().max().unwrap());
    // The mean, rounded to the nearest ns with halves up (the README's example shows an integer
    // `mean_ns` without saying how it is rounded; core::stats rounds halves up): floor((2·sum + n) / 2n).
    let sum: i128 = lat.iter().map(|&l| i128::from(l)).sum();
    let mean = (2 * sum + i128::from(n)).div_euclid(2 * i128::from(n));
    assert_eq!(t["mean_ns"], mean as i64, "mean of {n} latencies summing to {sum}");
    let unstable: Vec<&str> = t["unstable"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(unstable, expect_unstable, "{n} samples");
    // Every other metric and dimension by its own count.
    for m in r["metrics"].as_array().unwrap() {
        for x in std::iter::once(m).chain(m["dims"].as_array().unwrap()) {
            let c = x["count"].as_u64().unwrap();
            let got: Vec<&str> = x["unstable"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            let want = if c == 0 { vec![] } else { unstable_labels(c) };
            assert_eq!(got, want, "{} {}: {c} samples", m["name"], x["name"]);
        }
    }

    // The terminal table: the tick_to_trade row's percentile cells carry `*` exactly for those.
    let text = analyze_text(&token, &cap);
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("tick_to_trade "))
        .expect("a tick_to_trade row")
        .split_whitespace()
        .collect();
    let header: Vec<&str> = text.lines().find(|l| l.starts_with("metric ")).unwrap().split_whitespace().collect();
    assert_eq!(header, ["metric", "count", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean"]);
    assert_eq!(row.len(), header.len(), "{row:?}");
    assert_eq!(row[1], n.to_string());
    for (label, cell) in header.iter().zip(&row).skip(2) {
        assert_eq!(cell.ends_with('*'), expect_unstable.contains(label), "{label}: {cell}");
    }
    assert!(text.lines().any(|l| l == "* fewer than 100 samples beyond this percentile: not stable"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
