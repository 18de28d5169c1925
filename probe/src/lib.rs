//! wirestamp-probe: stage stamps from inside the trading app (issue 4).
