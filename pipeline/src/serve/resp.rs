//! A small Redis client: RESP2 over one TCP connection, the commands the queue uses and
//! nothing else (no pooling, no pipelining, no cluster).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Status(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply's bytes when it is a bulk or status string.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Reply::Bulk(Some(b)) => Some(b),
            Reply::Status(s) => Some(s.as_bytes()),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<String> {
        self.bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The items of an array (none for a null array or another reply).
    pub fn items(&self) -> &[Reply] {
        match self {
            Reply::Array(Some(v)) => v,
            _ => &[],
        }
    }
}

/// What went wrong talking to Redis.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    #[error("redis: {0}")]
    Io(#[from] std::io::Error),
    /// An error reply (`-ERR …`).
    #[error("redis replied: {0}")]
    Server(String),
    #[error("redis: malformed reply: {0}")]
    Protocol(String),
    #[error("{0}: not a redis://[:password@]host[:port][/db] address")]
    Url(String),
}

/// One connection.
#[derive(Debug)]
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

/// The longest bulk string accepted (Redis' own limit is 512 MiB).
const MAX_BULK: usize = 512 << 20;

impl Connection {
    /// Connects to `url` (`redis://[:password@]host[:port][/db]`), authenticates and selects
    /// the database.
    pub fn open(url: &str) -> Result<Connection, RedisError> {
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| RedisError::Url(url.to_string()))?;
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (hostport, db) = match rest.split_once('/') {
            Some((h, d)) if !d.is_empty() => (
                h,
                Some(
                    d.parse::<u32>()
                        .map_err(|_| RedisError::Url(url.to_string()))?,
                ),
            ),
            Some((h, _)) => (h, None),
            None => (rest, None),
        };
        let addr = if hostport.contains(':') {
            hostport.to_string()
        } else {
            format!("{hostport}:6379")
        };
        let stream = TcpStream::connect(&addr)?;
        stream.set_nodelay(true)?;
        let mut c = Connection {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        };
        c.set_timeout(Some(Duration::from_secs(30)))?;
        if let Some(a) = auth {
            let (user, pass) = a.split_once(':').unwrap_or(("", a));
            if user.is_empty() {
                c.call(&[b"AUTH", pass.as_bytes()])?;
            } else {
                c.call(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?;
            }
        }
        if let Some(db) = db {
            c.call(&[b"SELECT", db.to_string().as_bytes()])?;
        }
        Ok(c)
    }

    /// How long a reply may take (a blocking read must allow its block time).
    pub fn set_timeout(&mut self, t: Option<Duration>) -> Result<(), RedisError> {
        self.writer.set_read_timeout(t)?;
        self.writer.set_write_timeout(t)?;
        Ok(())
    }

    /// Sends one command and reads its reply; an error reply is an `Err`.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        self.pipeline(&[args.to_vec()])
            .map(|mut r| r.pop().unwrap_or(Reply::Array(None)))
    }

    /// Sends several commands at once, then reads their replies in order; the first error
    /// reply is an `Err` (after every reply was read).
    pub fn pipeline(&mut self, commands: &[Vec<&[u8]>]) -> Result<Vec<Reply>, RedisError> {
        let mut out = Vec::new();
        for args in commands {
            out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in args {
                out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                out.extend_from_slice(a);
                out.extend_from_slice(b"\r\n");
            }
        }
        self.writer.write_all(&out)?;
        let mut replies = Vec::with_capacity(commands.len());
        let mut first_error = None;
        for _ in commands {
            match self.read() {
                Ok(r) => replies.push(r),
                Err(RedisError::Server(m)) => {
                    first_error.get_or_insert(RedisError::Server(m));
                }
                Err(e) => return Err(e),
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(replies),
        }
    }

    fn line(&mut self) -> Result<String, RedisError> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line)?;
        if !line.ends_with(b"\r\n") {
            return Err(RedisError::Protocol("connection closed mid-reply".into()));
        }
        line.truncate(line.len() - 2);
        String::from_utf8(line).map_err(|_| RedisError::Protocol("a line that is not UTF-8".into()))
    }

    fn read(&mut self) -> Result<Reply, RedisError> {
        let line = self.line()?;
        let (kind, rest) = line.split_at(line.len().min(1));
        let int = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| RedisError::Protocol(format!("`{s}` is not a length")))
        };
        match kind {
            "+" => Ok(Reply::Status(rest.to_string())),
            "-" => Err(RedisError::Server(rest.to_string())),
            ":" => Ok(Reply::Int(int(rest)?)),
            "$" => {
                let n = int(rest)?;
                if n < 0 {
                    return Ok(Reply::Bulk(None));
                }
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                if n > MAX_BULK {
                    return Err(RedisError::Protocol(format!("a bulk string of {n} bytes")));
                }
                let mut buf = vec![0; n + 2];
                self.reader.read_exact(&mut buf)?;
                buf.truncate(n);
                Ok(Reply::Bulk(Some(buf)))
            }
            "*" => {
                let n = int(rest)?;
                if n < 0 {
                    return Ok(Reply::Array(None));
                }
                let mut items = Vec::new();
                for _ in 0..n {
                    // A nested error (in MULTI replies) is an error of the whole call.
                    items.push(self.read()?);
                }
                Ok(Reply::Array(Some(items)))
            }
            _ => Err(RedisError::Protocol(format!("unknown reply `{line}`"))),
        }
    }
}

/// A stream entry: its id and its field/value pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Entry {
    /// The value of `field`.
    pub fn get(&self, field: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(k, _)| k == field.as_bytes())
            .map(|(_, v)| v.as_slice())
    }
}

/// The entries of a reply that lists them (`[[id, [k, v, …]], …]`); deleted entries (whose
/// fields are null) are left out.
pub fn entries(list: &Reply) -> Vec<Entry> {
    list.items()
        .iter()
        .filter_map(|e| {
            let [id, fields @ Reply::Array(Some(_))] = e.items() else {
                return None;
            };
            let id = id.text()?;
            let fields = fields
                .items()
                .chunks(2)
                .filter_map(|kv| match kv {
                    [k, v] => Some((k.bytes()?.to_vec(), v.bytes()?.to_vec())),
                    _ => None,
                })
                .collect();
            Some(Entry { id, fields })
        })
        .collect()
}
