//! GPU architectures a task targets, the limits a launch must respect on each, and which PTX
//! `.target` a candidate may declare for it.

use std::fmt;
use std::str::FromStr;

/// An architecture-specific compile target: the `a` suffix means the PTX may use instructions
/// that run only on that exact generation (wgmma on sm_90a, tcgen05 on sm_100a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// Hopper: H100, H200.
    Sm90a,
    /// Blackwell datacenter: B200, GB200.
    Sm100a,
}

/// Hardware limits a launch is checked against before it reaches a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ArchLimits {
    pub max_threads_per_block: u64,
    pub max_block_dims: [u64; 3],
    pub max_grid_dims: [u64; 3],
    /// Dynamic shared memory a block may opt into (bytes), static included.
    pub max_shared_per_block: u64,
    /// Largest cluster without the non-portable opt-in.
    pub max_cluster_portable: u64,
    /// Largest cluster with `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`.
    pub max_cluster: u64,
    pub max_registers_per_thread: u64,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::Sm90a, Arch::Sm100a];

    pub fn as_str(self) -> &'static str {
        match self {
            Arch::Sm90a => "sm_90a",
            Arch::Sm100a => "sm_100a",
        }
    }

    /// The SM version number (90, 100).
    pub fn sm(self) -> u32 {
        match self {
            Arch::Sm90a => 90,
            Arch::Sm100a => 100,
        }
    }

    /// Lowest PTX ISA version that can target this architecture.
    pub fn min_ptx_version(self) -> (u32, u32) {
        match self {
            Arch::Sm90a => (8, 0),
            Arch::Sm100a => (8, 6),
        }
    }

    /// Marketing names of the GPUs, for prompts and pages.
    pub fn gpus(self) -> &'static str {
        match self {
            Arch::Sm90a => "NVIDIA Hopper (H100, H200)",
            Arch::Sm100a => "NVIDIA Blackwell (B200, GB200)",
        }
    }

    pub fn limits(self) -> ArchLimits {
        ArchLimits {
            max_threads_per_block: 1024,
            max_block_dims: [1024, 1024, 64],
            max_grid_dims: [(1 << 31) - 1, 65535, 65535],
            // 227 KB opt-in on both sm_90 and sm_100.
            max_shared_per_block: 232_448,
            max_cluster_portable: 8,
            max_cluster: 16,
            max_registers_per_thread: 255,
        }
    }

    /// Whether PTX declaring `.target target` can be loaded on this architecture.
    ///
    /// `sm_NN` is forward compatible (JIT), `sm_NNa` runs on exactly that SM, and `sm_NNf`
    /// (family-specific, PTX 8.8+) on later members of the same major generation.
    pub fn accepts_target(self, target: &str) -> Result<(), String> {
        let rest = target.strip_prefix("sm_").ok_or_else(|| {
            format!("`.target {target}` is not an SM target (expected e.g. {self})")
        })?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let suffix = &rest[digits.len()..];
        let nn: u32 = digits
            .parse()
            .map_err(|_| format!("`.target {target}` has no SM number"))?;
        let sm = self.sm();
        let ok = match suffix {
            "" => nn <= sm,
            "a" => nn == sm,
            "f" => nn / 10 == sm / 10 && nn <= sm,
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "`.target {target}` cannot run on {self}: use `.target {self}` (or a plain sm_NN with NN <= {sm})"
            ))
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Arch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Arch::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| format!("unknown arch `{s}` (known: sm_90a, sm_100a)"))
    }
}

impl serde::Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_that_run_on_hopper() {
        let a = Arch::Sm90a;
        assert!(a.accepts_target("sm_90a").is_ok());
        assert!(a.accepts_target("sm_90").is_ok());
        assert!(a.accepts_target("sm_80").is_ok());
        assert!(a.accepts_target("sm_100a").is_err());
        assert!(a.accepts_target("sm_89a").is_err());
        assert!(a.accepts_target("compute_90").is_err());
    }

    #[test]
    fn targets_that_run_on_blackwell() {
        let a = Arch::Sm100a;
        assert!(a.accepts_target("sm_100a").is_ok());
        assert!(a.accepts_target("sm_100f").is_ok());
        assert!(a.accepts_target("sm_90").is_ok());
        assert!(a.accepts_target("sm_90a").is_err());
        assert!(a.accepts_target("sm_103a").is_err());
    }

    #[test]
    fn names_round_trip() {
        for a in Arch::ALL {
            assert_eq!(a.as_str().parse::<Arch>(), Ok(a));
        }
        assert!("sm_89".parse::<Arch>().is_err());
    }
}
