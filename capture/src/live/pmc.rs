//! ptp4l's management interface, as `pmc -u` speaks it: IEEE 1588-2008 management messages (GET) over
//! ptp4l's Unix datagram socket (`uds_address`, default `/var/run/ptp4l`).
//!
//! ```text
//! header (34 bytes, big-endian)                    management (from 34)
//!  0 transportSpecific<<4 | messageType (0xD)       34 targetPortIdentity [10] (all 0xff: any)
//!  1 versionPTP (2)   2 messageLength u16           44 startingBoundaryHops  45 boundaryHops
//!  4 domainNumber     6 flags u16  8 correction i64 46 actionField (GET 0, RESPONSE 2)  47 reserved
//! 20 sourcePortIdentity [10]  30 sequenceId u16     48 TLV: type u16 (1 MANAGEMENT, 2 ERROR_STATUS),
//! 32 controlField (4) 33 logMessageInterval (0x7f)      length u16, managementId u16, data
//! ```
//! Datasets read: TIME_STATUS_NP (0xC000, linuxptp), PORT_DATA_SET (0x2004), CURRENT_DATA_SET (0x2001).
//! TimeInterval fields are ns scaled by 2^16; they are returned as whole ns (truncated toward zero).

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const TIME_STATUS_NP: u16 = 0xC000;
pub const PORT_DATA_SET: u16 = 0x2004;
pub const CURRENT_DATA_SET: u16 = 0x2001;
/// ptp4l's default management socket.
pub const DEFAULT_UDS: &str = "/var/run/ptp4l";

/// Encodes a GET for `id` with sequence number `seq`.
pub fn encode_get(id: u16, seq: u16) -> [u8; 54] {
    let mut b = [0u8; 54];
    b[0] = 0x0D;
    b[1] = 0x02;
    b[2..4].copy_from_slice(&54u16.to_be_bytes());
    b[30..32].copy_from_slice(&seq.to_be_bytes());
    b[32] = 0x04;
    b[33] = 0x7f;
    b[34..44].fill(0xff);
    b[48..50].copy_from_slice(&1u16.to_be_bytes());
    b[50..52].copy_from_slice(&2u16.to_be_bytes());
    b[52..54].copy_from_slice(&id.to_be_bytes());
    b
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Decodes a RESPONSE: returns (sequenceId, managementId, data), or an error for a management error
/// status or a malformed message.
pub fn decode_response(b: &[u8]) -> io::Result<(u16, u16, &[u8])> {
    if b.len() < 54 || b[0] & 0x0f != 0x0D {
        return Err(bad(format!("not a management message ({} bytes)", b.len())));
    }
    let seq = u16::from_be_bytes([b[30], b[31]]);
    let action = b[46] & 0x0f;
    let tlv = u16::from_be_bytes([b[48], b[49]]);
    let len = u16::from_be_bytes([b[50], b[51]]) as usize;
    let id = u16::from_be_bytes([b[52], b[53]]);
    if tlv == 2 {
        // MANAGEMENT_ERROR_STATUS: errorId u16 at 52, managementId at 54.
        let mid = b.get(54..56).map_or(0, |m| u16::from_be_bytes([m[0], m[1]]));
        return Err(bad(format!("ptp4l answered error {id:#06x} for management id {mid:#06x}")));
    }
    if action != 2 || tlv != 1 || len < 2 || 52 + len > b.len() {
        return Err(bad(format!("unexpected management reply: action {action}, tlv {tlv}, length {len}")));
    }
    Ok((seq, id, &b[54..52 + len]))
}

fn be_i64(d: &[u8], at: usize) -> io::Result<i64> {
    d.get(at..at + 8)
        .map(|s| i64::from_be_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| bad("dataset too short"))
}

/// A clock identity as pmc prints it: `9a1d37.fffe.8477aa`.
pub fn clock_identity(id: &[u8]) -> String {
    let h: Vec<String> = id.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}.{}.{}", h[0..3].concat(), h[3..5].concat(), h[5..8].concat())
}

/// TIME_STATUS_NP (linuxptp).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeStatus {
    pub master_offset_ns: i64,
    pub ingress_time_ns: i64,
    pub gm_present: bool,
    pub gm_identity: String,
}

impl TimeStatus {
    pub fn decode(d: &[u8]) -> io::Result<TimeStatus> {
        if d.len() < 50 {
            return Err(bad("TIME_STATUS_NP too short"));
        }
        Ok(TimeStatus {
            master_offset_ns: be_i64(d, 0)?,
            ingress_time_ns: be_i64(d, 8)?,
            gm_present: i32::from_be_bytes(d[38..42].try_into().expect("4 bytes")) != 0,
            gm_identity: clock_identity(&d[42..50]),
        })
    }
}

/// IEEE 1588 port states (index = value).
pub const PORT_STATES: [&str; 10] = [
    "?",
    "INITIALIZING",
    "FAULTY",
    "DISABLED",
    "LISTENING",
    "PRE_MASTER",
    "MASTER",
    "PASSIVE",
    "UNCALIBRATED",
    "SLAVE",
];

/// PORT_DATA_SET (the fields wirestamp reports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortDataSet {
    pub port_identity: String,
    pub port_state: &'static str,
    pub peer_mean_path_delay_ns: i64,
    pub delay_mechanism: u8,
}

impl PortDataSet {
    pub fn decode(d: &[u8]) -> io::Result<PortDataSet> {
        if d.len() < 26 {
            return Err(bad("PORT_DATA_SET too short"));
        }
        Ok(PortDataSet {
            port_identity: format!("{}-{}", clock_identity(&d[0..8]), u16::from_be_bytes([d[8], d[9]])),
            port_state: PORT_STATES.get(d[10] as usize).copied().unwrap_or("?"),
            peer_mean_path_delay_ns: be_i64(d, 12)? / 65536,
            delay_mechanism: d[23],
        })
    }
}

/// CURRENT_DATA_SET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentDataSet {
    pub steps_removed: u16,
    pub offset_from_master_ns: i64,
    pub mean_path_delay_ns: i64,
}

impl CurrentDataSet {
    pub fn decode(d: &[u8]) -> io::Result<CurrentDataSet> {
        Ok(CurrentDataSet {
            steps_removed: u16::from_be_bytes([
                *d.first().ok_or_else(|| bad("short"))?,
                *d.get(1).ok_or_else(|| bad("short"))?,
            ]),
            offset_from_master_ns: be_i64(d, 2)? / 65536,
            mean_path_delay_ns: be_i64(d, 10)? / 65536,
        })
    }
}

/// A management client bound to its own socket path (removed on drop).
pub struct Pmc {
    sock: UnixDatagram,
    own: PathBuf,
    server: PathBuf,
    seq: u16,
}

impl Pmc {
    /// Binds a client socket next to nothing else (`/tmp/wirestamp-pmc.PID.N`) for `server`.
    pub fn new(server: &Path) -> io::Result<Pmc> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let own = std::env::temp_dir().join(format!("wirestamp-pmc.{}.{n}", std::process::id()));
        let _ = std::fs::remove_file(&own);
        let sock = UnixDatagram::bind(&own)?;
        sock.set_read_timeout(Some(Duration::from_millis(500)))?;
        Ok(Pmc { sock, own, server: server.to_path_buf(), seq: 0 })
    }

    /// Sends GET `id` and returns the response's data field.
    pub fn get(&mut self, id: u16) -> io::Result<Vec<u8>> {
        self.seq = self.seq.wrapping_add(1);
        self.sock
            .send_to(&encode_get(id, self.seq), &self.server)
            .map_err(|e| io::Error::new(e.kind(), format!("ptp4l management socket {}: {e}", self.server.display())))?;
        let mut buf = [0u8; 1500];
        loop {
            let n = self.sock.recv(&mut buf).map_err(|e| {
                io::Error::new(e.kind(), format!("no answer from ptp4l at {}: {e}", self.server.display()))
            })?;
            let (seq, rid, data) = decode_response(&buf[..n])?;
            if seq == self.seq && rid == id {
                return Ok(data.to_vec());
            }
        }
    }

    pub fn time_status(&mut self) -> io::Result<TimeStatus> {
        TimeStatus::decode(&self.get(TIME_STATUS_NP)?)
    }
    pub fn port_data_set(&mut self) -> io::Result<PortDataSet> {
        PortDataSet::decode(&self.get(PORT_DATA_SET)?)
    }
    pub fn current_data_set(&mut self) -> io::Result<CurrentDataSet> {
        CurrentDataSet::decode(&self.get(CURRENT_DATA_SET)?)
    }
}

impl Drop for Pmc {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_encoding() {
        let b = encode_get(TIME_STATUS_NP, 7);
        assert_eq!(&b[0..4], &[0x0d, 0x02, 0x00, 0x36]);
        assert_eq!(&b[30..34], &[0x00, 0x07, 0x04, 0x7f]);
        assert_eq!(&b[34..44], &[0xff; 10]);
        assert_eq!(&b[44..54], &[0, 0, 0, 0, 0x00, 0x01, 0x00, 0x02, 0xc0, 0x00]);
    }

    fn response(seq: u16, id: u16, data: &[u8]) -> Vec<u8> {
        let mut b = encode_get(id, seq).to_vec();
        b[46] = 2;
        b[50..52].copy_from_slice(&(2 + data.len() as u16).to_be_bytes());
        b.extend_from_slice(data);
        let len = b.len() as u16;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        b
    }

    #[test]
    fn time_status_np() {
        let mut d = vec![0u8; 50];
        d[0..8].copy_from_slice(&(-1234i64).to_be_bytes());
        d[8..16].copy_from_slice(&1_700_000_000_000_000_000i64.to_be_bytes());
        d[38..42].copy_from_slice(&1i32.to_be_bytes());
        d[42..50].copy_from_slice(&[0x9a, 0x1d, 0x37, 0xff, 0xfe, 0x84, 0x77, 0xaa]);
        let r = response(3, TIME_STATUS_NP, &d);
        let (seq, id, data) = decode_response(&r).unwrap();
        assert_eq!((seq, id), (3, TIME_STATUS_NP));
        let t = TimeStatus::decode(data).unwrap();
        assert_eq!(t.master_offset_ns, -1234);
        assert!(t.gm_present);
        assert_eq!(t.gm_identity, "9a1d37.fffe.8477aa");
    }

    #[test]
    fn port_and_current_data_sets() {
        let mut d = vec![0u8; 26];
        d[0..8].copy_from_slice(&[0x9a, 0x1d, 0x37, 0xff, 0xfe, 0x84, 0x77, 0xaa]);
        d[9] = 1;
        d[10] = 9; // SLAVE
        d[12..20].copy_from_slice(&(500i64 << 16).to_be_bytes());
        d[23] = 1; // E2E
        let p = PortDataSet::decode(&d).unwrap();
        assert_eq!(
            (p.port_identity.as_str(), p.port_state, p.peer_mean_path_delay_ns),
            ("9a1d37.fffe.8477aa-1", "SLAVE", 500)
        );
        let mut c = vec![0u8; 18];
        c[0..2].copy_from_slice(&1u16.to_be_bytes());
        c[2..10].copy_from_slice(&((-172i64) << 16).to_be_bytes());
        c[10..18].copy_from_slice(&((361i64 << 16) + 0x8000).to_be_bytes());
        let c = CurrentDataSet::decode(&c).unwrap();
        assert_eq!((c.steps_removed, c.offset_from_master_ns, c.mean_path_delay_ns), (1, -172, 361));
    }

    #[test]
    fn error_status_and_garbage() {
        let mut r = response(1, PORT_DATA_SET, &[0x20, 0x04, 0, 0]);
        r[48..50].copy_from_slice(&2u16.to_be_bytes());
        r[52..54].copy_from_slice(&0x0002u16.to_be_bytes()); // NO_SUCH_ID
        assert!(decode_response(&r).unwrap_err().to_string().contains("error 0x0002"));
        assert!(decode_response(&[0u8; 10]).is_err());
    }
}
