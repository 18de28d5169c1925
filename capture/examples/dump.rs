//! Prints every frame of the given capture files (merged) as `epoch|interface|wire_len|caplen`,
//! the same columns as `tshark -T fields -e frame.time_epoch -e frame.interface_id -e frame.len
//! -e frame.cap_len`, then the interface table, stats and warnings on stderr.

use std::path::PathBuf;

use wirestamp_capture::MergedReader;
use wirestamp_core::time::format_epoch;

fn main() {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let mut r = match MergedReader::open(&paths) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    loop {
        match r.next_frame() {
            Ok(Some((_, f))) => {
                let ts = if f.has_ts() { format_epoch(f.ts_ns) } else { String::new() };
                println!("{ts}|{}|{}|{}", f.interface, f.wire_len, f.caplen());
            }
            Ok(None) => break,
            Err(e) => eprintln!("error: {e}"),
        }
    }
    for i in r.interfaces() {
        eprintln!("{i:?}");
    }
    for inp in r.inputs() {
        eprintln!("{}: {:?} {:?}", inp.name(), inp.format(), inp.stats());
        for w in inp.warnings() {
            eprintln!("warning: {}: {w}", inp.name());
        }
    }
}
