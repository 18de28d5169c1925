//! wirestamp-lab: markets with known answers.
//!
//! [`synth`] writes a capture of an ITCH 5.0 / MoldUDP64 feed (A and B copies) and an OUCH 5.0 /
//! SoupBinTCP order session whose tick-to-trade latencies it chose itself, plus a truth file with every
//! pair's exact latency. The encoders in [`encode`] are written from the specs independently of the
//! decoders in `wirestamp-core`, so a round trip through both checks each against the other.

pub mod encode;
pub mod packet;
pub mod rng;
pub mod synth;
