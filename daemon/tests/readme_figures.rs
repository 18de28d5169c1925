//! Figures the README quotes from synth's default capture, checked against what the tools give on it
//! now: a change to synth or to the analysis that moves them makes this fail, so the README is
//! mended with it instead of going stale.

use std::collections::HashMap;

mod support;
use support::{analyze_json, metric, tmpdir};

/// The numbers of README's sentence "on synth's capture, p99 A us against a true B us, C of D orders
/// paired with a later tick than their trigger", as written (A and B with their decimals).
fn readme_symbol_rule_figures() -> (String, String, u64, u64) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    // The sentence may be folded across lines: read it as one.
    let text = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = text.find("on synth's capture, p99 ").expect("README quotes the symbol rule's p99 on synth's capture");
    let words: Vec<&str> = text[at..].split(' ').collect();
    // on synth's capture, p99 A us against a true B us, C of D orders paired with a later tick
    assert_eq!(
        [words[5], words[6], words[7], words[8], words[10], words[12], words[14], words[15]],
        ["us", "against", "a", "true", "us,", "of", "orders", "paired"],
        "README's sentence changed shape: {:?}",
        &words[..20]
    );
    let count = |w: &str| w.replace(',', "").parse::<u64>().unwrap();
    (words[4].to_owned(), words[9].to_owned(), count(words[11]), count(words[13]))
}

/// One CSV file's rows as maps from column name to field (synth's and analyze's files quote nothing).
fn csv(path: &std::path::Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_owned).collect();
    lines.map(|l| header.iter().cloned().zip(l.split(',').map(str::to_owned)).collect()).collect()
}

/// `ns` in microseconds with two decimals, as the README writes it.
fn us(ns: i64) -> String {
    format!("{:.2}", ns as f64 / 1_000.0)
}

#[test]
fn the_symbol_rules_figures_on_synths_capture_are_the_readmes() {
    let dir = tmpdir("readme-figures");
    let cap = dir.join("synth.pcapng");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wirestamp")).arg("synth").arg(&cap).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let truth = csv(&dir.join("synth.pcapng.truth.csv"));
    let trigger: HashMap<&str, u64> =
        truth.iter().map(|r| (r["cl_ord_id"].as_str(), r["tick_seq"].parse().unwrap())).collect();

    let pairs = dir.join("pairs.csv");
    let symbol = analyze_json(&["--pairs", pairs.to_str().unwrap()], &cap);
    let token = analyze_json(&["--match", r"token:T(\d+)"], &cap);
    let p99 = |r: &serde_json::Value| metric(r, "tick_to_trade")["p99_ns"].as_i64().unwrap();

    // The truth's p99 (nearest rank), which the token rule measures within HdrHistogram's precision.
    let mut latencies: Vec<i64> = truth.iter().map(|r| r["latency_ns"].parse().unwrap()).collect();
    latencies.sort_unstable();
    let true_p99 = latencies[(latencies.len() * 99).div_ceil(100) - 1];
    assert!((p99(&token) - true_p99).abs() <= true_p99 / 1_000, "token rule p99 {} vs truth {true_p99}", p99(&token));

    // Orders the symbol rule paired with a later tick of their symbol than their trigger.
    let pairs = csv(&pairs);
    let later = pairs.iter().filter(|p| p["tick_seq"].parse::<u64>().unwrap() > trigger[p["token"].as_str()]).count();

    let (readme_p99, readme_true, readme_later, readme_orders) = readme_symbol_rule_figures();
    assert_eq!(
        (us(p99(&symbol)), us(p99(&token)), later as u64, truth.len() as u64),
        (readme_p99, readme_true, readme_later, readme_orders),
        "README's figures on synth's capture (p99 symbol rule, p99 true, later ticks, orders) are stale"
    );
    assert_eq!(pairs.len(), truth.len(), "every order paired by the symbol rule");
    std::fs::remove_dir_all(&dir).unwrap();
}
