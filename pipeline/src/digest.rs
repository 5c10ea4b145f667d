//! Content digests: blake3, written as 64 lowercase hex characters.

use std::fmt;
use std::str::FromStr;

/// A blake3 digest. Invariant: parses only from exactly 64 lowercase hex characters.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// Digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    pub fn from_hasher(h: &blake3::Hasher) -> Digest {
        Digest(*h.finalize().as_bytes())
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The hex form.
    pub fn hex(&self) -> String {
        // Every byte is an ASCII hex digit: the check takes the ASCII fast path and never fails.
        std::str::from_utf8(&self.hex_bytes()).map_or_else(|_| String::new(), str::to_owned)
    }

    /// The first `n` hex characters, for display.
    pub fn short(&self, n: usize) -> String {
        let mut s = self.hex();
        s.truncate(n);
        s
    }

    /// The 64 lowercase hex digits, without formatting machinery (a site names digests
    /// millions of times).
    fn hex_bytes(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        hex_bytes::encode_into(&self.0, &mut out);
        out
    }
}

/// Bytes as lowercase hex in serde formats (a cubin inside a worker's JSON request).
pub mod hex_bytes {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";

    /// Writes the hex digits of `bytes` into `out` (twice as long).
    pub fn encode_into(bytes: &[u8], out: &mut [u8]) {
        for (i, b) in bytes.iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(b >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(b & 0x0f)];
        }
    }

    /// The bytes of lowercase or uppercase hex text, or where it is not hex.
    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        let t = text.as_bytes();
        if !t.len().is_multiple_of(2) {
            return Err(format!("odd number of hex digits ({})", t.len()));
        }
        let digit = |i: usize| match t[i] {
            c @ b'0'..=b'9' => Ok(c - b'0'),
            c @ b'a'..=b'f' => Ok(c - b'a' + 10),
            c @ b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!("byte {i} is not a hex digit")),
        };
        let mut out = Vec::with_capacity(t.len() / 2);
        for i in 0..t.len() / 2 {
            out.push(digit(2 * i)? << 4 | digit(2 * i + 1)?);
        }
        Ok(out)
    }

    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let mut out = vec![0u8; 2 * bytes.len()];
        encode_into(bytes, &mut out);
        s.serialize_str(std::str::from_utf8(&out).map_err(serde::ser::Error::custom)?)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text: std::borrow::Cow<'de, str> = serde::Deserialize::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}

/// A hasher for digests as hash-map keys: a digest is already uniformly random, so its first
/// eight bytes are the hash (no mixing). Other keys get a plain FNV-1a of their bytes.
#[derive(Debug, Default, Clone, Copy)]
pub struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(head) = bytes.first_chunk::<8>().filter(|_| bytes.len() == 32) {
            self.0 ^= u64::from_le_bytes(*head);
        } else {
            for b in bytes {
                self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }

    // The length prefix `[u8; 32]` hashes first says nothing about a digest.
    fn write_usize(&mut self, _: usize) {}
}

/// A map keyed by digest.
pub type DigestMap<V> =
    std::collections::HashMap<Digest, V, std::hash::BuildHasherDefault<DigestHasher>>;

/// Why a string is not a digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a blake3 digest (64 lowercase hex characters): {reason}")]
pub struct DigestError {
    pub text: String,
    pub reason: &'static str,
}

impl FromStr for Digest {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| DigestError {
            text: s.chars().take(80).collect(),
            reason,
        };
        if s.len() != 64 {
            return Err(err("wrong length"));
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let nib = |c: u8| match c {
                b'0'..=b'9' => Ok(c - b'0'),
                b'a'..=b'f' => Ok(c - b'a' + 10),
                _ => Err(err("not lowercase hex")),
            };
            out[i] = (nib(pair[0])? << 4) | nib(pair[1])?;
        }
        Ok(Digest(out))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex_bytes();
        // Every byte is an ASCII hex digit, so this never fails.
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Parsed from the text where it lies (no String per digest: a site loads millions).
        struct Hex;
        impl serde::de::Visitor<'_> for Hex {
            type Value = Digest;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a blake3 digest as 64 lowercase hex digits")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Digest, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Hex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn digest_maps_find_what_they_hold() {
        let held: Vec<Digest> = (0u32..1000).map(|i| Digest::of(&i.to_le_bytes())).collect();
        let set: DigestMap<()> = held.iter().map(|d| (*d, ())).collect();
        assert_eq!(set.len(), 1000);
        assert!(held.iter().all(|d| set.contains_key(d)));
        assert!(!set.contains_key(&Digest::of(b"not held")));
        let mut map: DigestMap<usize> = DigestMap::default();
        map.insert(held[3], 3);
        assert_eq!(map.get(&held[3]), Some(&3));
        assert_eq!(map.get(&held[4]), None);
    }

    #[test]
    fn hex_bytes_names_what_is_not_hex() {
        assert_eq!(hex_bytes::decode("00fF7a"), Ok(vec![0, 255, 122]));
        assert!(hex_bytes::decode("abc").is_err_and(|e| e.contains("odd")));
        assert!(hex_bytes::decode("0g").is_err_and(|e| e.contains("byte 1")));
    }

    #[test]
    fn rejects_non_canonical_text() {
        let d = Digest::of(b"x").to_string();
        assert!(d.to_uppercase().parse::<Digest>().is_err());
        assert!(d[..63].parse::<Digest>().is_err());
        assert!(format!("{d}0").parse::<Digest>().is_err());
    }

    proptest! {
        #[test]
        fn hex_bytes_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut out = vec![0u8; 2 * bytes.len()];
            hex_bytes::encode_into(&bytes, &mut out);
            let text = String::from_utf8(out).expect("hex is ASCII");
            prop_assert_eq!(hex_bytes::decode(&text), Ok(bytes));
        }

        #[test]
        fn round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let d = Digest::of(&bytes);
            prop_assert_eq!(d.to_string().parse::<Digest>(), Ok(d));
        }
    }
}
