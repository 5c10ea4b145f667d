//! Where a number comes from: measured by this pipeline, or reported by someone else and
//! imported as is. Serialised lowercase (`"measured"`, `"reported"`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a number comes from. Reported numbers and numbers measured here are never mixed in
/// one aggregate: provenance is part of every grouping key. Ordered as declared (measured
/// first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Measured by this pipeline (a `ptxbench.record`).
    Measured,
    /// Published elsewhere and imported as is (the paper's data); never measured here.
    Reported,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Reported => "reported",
        }
    }

    pub fn parse(s: &str) -> Option<Provenance> {
        match s {
            "measured" => Some(Provenance::Measured),
            "reported" => Some(Provenance::Reported),
            _ => None,
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        for p in [Provenance::Measured, Provenance::Reported] {
            assert_eq!(Provenance::parse(p.as_str()), Some(p));
            let json = serde_json::to_string(&p).expect("serialise");
            assert_eq!(json, format!("\"{p}\""));
            assert_eq!(serde_json::from_str::<Provenance>(&json).expect("parse"), p);
        }
        assert_eq!(Provenance::parse("Reported"), None);
        assert!(Provenance::Measured < Provenance::Reported);
    }
}
