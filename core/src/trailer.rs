//! Tap timestamp trailers and headers (formats.md §4). Placeholder: filled in by the trailer work.

use serde::Serialize;

/// A timestamp trailer/header format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrailerKind {
    /// Arista 7130 / Metamako MetaWatch trailer.
    Metamako,
    /// cPacket footer.
    Cpacket,
    /// Cisco/Exablaze Fusion HPT trailer (40-bit fraction).
    ExablazeHpt,
    /// Cisco/Exablaze Fusion 32-bit counter with keyframes.
    ExablazeFusion,
    /// Arista 7150 31-bit tick with keyframes.
    Arista7150,
    /// Arista 7280 0xD28B header (64- or 48-bit).
    Arista7280,
}

impl TrailerKind {
    /// Short stable name, as used by `--trailer` and in output.
    pub fn name(self) -> &'static str {
        match self {
            TrailerKind::Metamako => "metamako",
            TrailerKind::Cpacket => "cpacket",
            TrailerKind::ExablazeHpt => "exablaze_hpt",
            TrailerKind::ExablazeFusion => "exablaze_fusion",
            TrailerKind::Arista7150 => "arista7150",
            TrailerKind::Arista7280 => "arista7280",
        }
    }
}
