//! Reading the trigger's sequence number out of an order token under `--match token:REGEX`.
//!
//! Most rules are a literal prefix and a digit run (`T(\d+)`, `^ORD(\d+)$`). Those are read directly,
//! with exactly the regex's leftmost-first semantics on ASCII text; anything else, or a token that is
//! not ASCII (where `\d` also matches other scripts' digits), goes through the regex. The regex engine
//! costs over a thousand instructions per order; the direct path a few dozen.

use regex::{CaptureLocations, Regex};

/// The compiled rule.
#[derive(Debug, Clone)]
pub struct TokenRule {
    re: Regex,
    locs: CaptureLocations,
    simple: Option<Simple>,
}

/// `^?LITERAL(\d+)$?`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Simple {
    prefix: Vec<u8>,
    start: bool,
    end: bool,
}

impl Simple {
    /// Recognises the form from the regex's source; `None` for anything else.
    fn parse(src: &str) -> Option<Simple> {
        let (start, rest) = match src.strip_prefix('^') {
            Some(r) => (true, r),
            None => (false, src),
        };
        let (end, rest) = match rest.strip_suffix('$') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let prefix = rest.strip_suffix(r"(\d+)")?;
        // Only characters that stand for themselves in a regex.
        prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b':').then(|| Simple {
            prefix: prefix.as_bytes().to_vec(),
            start,
            end,
        })
    }

    /// The digits of the leftmost match, on ASCII `tok`.
    fn digits<'t>(&self, tok: &'t [u8]) -> Option<&'t [u8]> {
        let last = if self.start { 0 } else { tok.len().saturating_sub(self.prefix.len()) };
        for i in 0..=last {
            let Some(after) = tok.get(i..).and_then(|t| t.strip_prefix(self.prefix.as_slice())) else { continue };
            let n = after.iter().take_while(|b| b.is_ascii_digit()).count();
            if n > 0 && (!self.end || n == after.len()) {
                return Some(&after[..n]);
            }
        }
        None
    }
}

impl TokenRule {
    /// The rule for `re` (which has at least one capture group).
    pub fn new(re: &Regex) -> TokenRule {
        TokenRule { re: re.clone(), locs: re.capture_locations(), simple: Simple::parse(re.as_str()) }
    }

    /// The regular expression, as given.
    pub fn as_str(&self) -> &str {
        self.re.as_str()
    }

    /// The sequence number `tok` carries: the first capture group, in decimal.
    pub fn seq(&mut self, tok: &str) -> Option<u64> {
        self.seq_of(tok.as_bytes())
    }

    /// [`TokenRule::seq`] of the token's bytes, taken as UTF-8 with invalid sequences replaced
    /// (`String::from_utf8_lossy`), which ASCII tokens of the simple form never need.
    pub fn seq_of(&mut self, tok: &[u8]) -> Option<u64> {
        match &self.simple {
            Some(s) if tok.is_ascii() => decimal(s.digits(tok)?),
            _ => {
                let tok = String::from_utf8_lossy(tok);
                self.re.captures_read(&mut self.locs, &tok)?;
                let (a, b) = self.locs.get(1)?;
                tok[a..b].parse().ok()
            }
        }
    }
}

/// ASCII digits as a number, `None` on overflow (`str::parse::<u64>` of digits).
fn decimal(digits: &[u8]) -> Option<u64> {
    let digits = &digits[digits.iter().take_while(|&&d| d == b'0').count()..];
    // Up to 19 digits cannot overflow: checked arithmetic only for the 20-digit values near the top.
    let value = |d: &[u8]| d.iter().fold(0u64, |n, d| n.wrapping_mul(10).wrapping_add(u64::from(d - b'0')));
    match digits.len() {
        0..=19 => Some(value(digits)),
        20 => value(&digits[..19]).checked_mul(10)?.checked_add(u64::from(digits[19] - b'0')),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_as_str_parse_reads_them() {
        for d in [
            "0",
            "7",
            "0000000000000000000000042",
            "9999999999999999999",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
            "100000000000000000000",
            "000018446744073709551615",
        ] {
            assert_eq!(decimal(d.as_bytes()), d.parse::<u64>().ok(), "{d}");
        }
    }

    #[test]
    fn simple_forms_are_recognised_and_others_are_not() {
        let s = |p: &str, start, end| Some(Simple { prefix: p.as_bytes().to_vec(), start, end });
        assert_eq!(Simple::parse(r"T(\d+)"), s("T", false, false));
        assert_eq!(Simple::parse(r"^ORD-(\d+)$"), s("ORD-", true, true));
        assert_eq!(Simple::parse(r"(\d+)"), s("", false, false));
        for other in [r"T(\d+)X", r"T.(\d+)", r"(?i)t(\d+)", r"T(\d{3})", r"T(\d*)", r"[AB](\d+)", r"T(\d+)|U(\d+)"] {
            assert_eq!(Simple::parse(other), None, "{other}");
        }
    }

    /// The direct path gives what the regex gives, on every token of a small alphabet that makes
    /// prefixes, digits and near-misses collide (all strings up to 6 long, plus non-ASCII digits).
    #[test]
    fn same_sequence_as_the_regex() {
        let alphabet = ['T', 'O', '1', '2', '0', 'x'];
        let mut tokens = vec![String::new()];
        let mut layer = vec![String::new()];
        for _ in 0..6 {
            layer = layer.iter().flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}"))).collect();
            tokens.extend(layer.iter().cloned());
        }
        tokens.extend(["T١٢", "T١T5", "٣T7", "T99999999999999999999999"].map(String::from));
        for pat in [r"T(\d+)", r"^T(\d+)", r"T(\d+)$", r"^T(\d+)$", r"(\d+)", r"TO(\d+)", r"^(\d+)$", r"OT1(\d+)"] {
            let re = Regex::new(pat).unwrap();
            let mut rule = TokenRule::new(&re);
            assert!(rule.simple.is_some(), "{pat} takes the direct path");
            for tok in &tokens {
                let want = re.captures(tok).and_then(|c| c.get(1)).and_then(|g| g.as_str().parse::<u64>().ok());
                assert_eq!(rule.seq(tok), want, "pattern {pat}, token {tok:?}");
                assert_eq!(rule.seq_of(tok.as_bytes()), want, "pattern {pat}, token {tok:?} as bytes");
            }
        }
        // A rule outside the simple form still works, through the regex.
        let mut rule = TokenRule::new(&Regex::new(r"[A-Z]+(\d+)").unwrap());
        assert!(rule.simple.is_none());
        assert_eq!(rule.seq("XY42"), Some(42));
    }
}
