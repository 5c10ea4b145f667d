//! Seeds drawn at run time: nobody can know a run's inputs before it starts. A drawn seed is
//! recorded in every record it made (and in the run's resumption index, so a resumed run keeps
//! it).

pub use crate::entropy::{EntropyError as SeedError, draw_u64 as draw};

/// Where a run's seed came from, in the order that wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeedOrigin {
    /// `--seed` on the command line.
    Flag,
    /// The run list's `seed`.
    List,
    /// Drawn by an earlier, interrupted start of the same run (kept in its index).
    Resumed,
    /// Drawn now.
    Drawn,
}

/// The seed of a run: the flag, else the list's, else the one an earlier start drew, else a
/// new draw.
pub fn choose(
    flag: Option<u64>,
    list: Option<u64>,
    resumed: Option<u64>,
) -> Result<(u64, SeedOrigin), SeedError> {
    Ok(match (flag, list, resumed) {
        (Some(s), _, _) => (s, SeedOrigin::Flag),
        (None, Some(s), _) => (s, SeedOrigin::List),
        (None, None, Some(s)) => (s, SeedOrigin::Resumed),
        (None, None, None) => (draw()?, SeedOrigin::Drawn),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_beats_the_list_beats_a_resumed_draw() {
        let pick = |f, l, r| choose(f, l, r).expect("no draw needed");
        assert_eq!(pick(Some(1), Some(2), Some(3)), (1, SeedOrigin::Flag));
        assert_eq!(pick(None, Some(2), Some(3)), (2, SeedOrigin::List));
        assert_eq!(pick(None, None, Some(3)), (3, SeedOrigin::Resumed));
        let (a, origin) = choose(None, None, None).expect("entropy");
        assert_eq!(origin, SeedOrigin::Drawn);
        // Two draws of 64 bits agree with probability 2^-64.
        assert_ne!(a, draw().expect("entropy"));
    }
}
