#![no_main]
//! Any bytes, under any link type: dissection never panics and its offsets stay inside the frame.

use libfuzzer_sys::fuzz_target;
use wirestamp_core::LinkType;
use wirestamp_core::dissect::dissect;

fuzz_target!(|input: &[u8]| {
    let Some((&sel, data)) = input.split_first() else { return };
    let link = [LinkType::Ethernet, LinkType::LinuxSll, LinkType::LinuxSll2, LinkType::Raw, LinkType::Null, LinkType::Loop]
        [sel as usize % 6];
    let d = dissect(data, link);
    assert!(d.l3_offset <= data.len());
    let _ = d.payload(data);
});
