//! `ptxbench show HASH-OR-PREFIX [--raw]`: one object, readable (pretty JSON for typed
//! objects, first lines of text blobs, size and hash of binaries), what it references and what
//! refers to it; reported data is marked REPORTED. `--raw` writes the exact bytes to stdout.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::digest::Digest;
use crate::record::{self, Decoded};
use crate::store::closure::referrers;
use crate::store::object::{self, Content, ObjectKind, Schema};
use crate::store::reported::ImportObject;
use crate::store::{Store, StoreError};

use super::verify::StoreArgs;

/// How many lines of a text blob to print.
const TEXT_LINES: usize = 20;

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A digest or a unique prefix of one.
    pub object: String,
    /// Write the object's exact bytes to stdout.
    #[arg(long)]
    pub raw: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub fn run(a: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = a.store.open()?;
    let digest = store.resolve(&a.object)?;
    let bytes = store.get(&digest)?;
    let out = if a.raw {
        bytes
    } else {
        render(&store, &digest, &bytes)?.into_bytes()
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&out).and_then(|()| stdout.flush()) {
        // A closed pipe (`show … | head`) is the reader's choice, not a failure.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The readable form of one object.
fn render(store: &Store, digest: &Digest, bytes: &[u8]) -> anyhow::Result<String> {
    let content = object::classify(bytes).map_err(|source| StoreError::Malformed {
        digest: *digest,
        source,
    })?;
    let by = referrers(store, digest)?;
    // Reported if the object says so, or if a reported import holds it.
    let mut reported_as = Vec::new();
    for (d, _, schema) in &by {
        if schema.kind == ObjectKind::Import
            && let Ok(import) = store.get_json::<ImportObject>(d)
        {
            for f in import.files.iter().filter(|f| f.content_digest == *digest) {
                reported_as.push(format!("file `{}` of \"{}\"", f.name, import.source));
            }
        }
    }
    let mut out = String::new();
    writeln!(out, "object {digest}")?;
    writeln!(out, "path   {}", Store::relative_path_of(digest))?;
    writeln!(out, "size   {} bytes", bytes.len())?;
    let self_reported = matches!(&content, Content::Object(o)
        if o.value.get("provenance").and_then(|v| v.as_str()) == Some("reported"));
    if self_reported || !reported_as.is_empty() {
        writeln!(
            out,
            "provenance  REPORTED: external data as published, not measured here"
        )?;
    }
    for r in &reported_as {
        writeln!(out, "            ({r})")?;
    }
    match &content {
        Content::Object(o) => {
            writeln!(out, "kind   {} ({})", o.schema.kind, o.schema)?;
            if let Some(decoded) = record::decode_object(digest, bytes) {
                writeln!(out, "reads  {}", describe(decoded))?;
            }
            if let Some(source) = o.value.get("source").and_then(|v| v.as_str()) {
                writeln!(out, "source {source}")?;
            }
            writeln!(out)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&o.value)?)?;
            writeln!(out)?;
            if o.references.is_empty() {
                writeln!(out, "references: none")?;
            } else {
                writeln!(out, "references ({}):", o.references.len())?;
                for r in &o.references {
                    writeln!(
                        out,
                        "  {:<40} {}  {}",
                        r.field,
                        r.digest,
                        status(store, &r.digest)
                    )?;
                }
            }
        }
        Content::Text => {
            let text = String::from_utf8_lossy(bytes);
            let lines = text.lines().count();
            writeln!(out, "kind   text blob, {lines} lines")?;
            writeln!(out)?;
            for line in text.lines().take(TEXT_LINES) {
                writeln!(out, "  {line}")?;
            }
            if lines > TEXT_LINES {
                writeln!(
                    out,
                    "  … {} more lines (use --raw for all)",
                    lines - TEXT_LINES
                )?;
            }
        }
        Content::Binary => writeln!(out, "kind   binary blob")?,
    }
    writeln!(out)?;
    if by.is_empty() {
        writeln!(out, "referred to by: nothing in this store")?;
    } else {
        writeln!(out, "referred to by ({}):", by.len())?;
        for (d, field, schema) in &by {
            writeln!(
                out,
                "  {d} ({schema}) field `{field}`{}",
                mark(schema, store, d)
            )?;
        }
    }
    Ok(out)
}

/// One line about a record, run, task or suite object as this version reads it.
fn describe(decoded: Result<Decoded, record::RecordError>) -> String {
    match decoded {
        Ok(Decoded::Record(r)) => format!(
            "record of {} on {} ({}): {}{}",
            r.entry,
            r.task,
            r.arch,
            r.verdict.as_str(),
            if r.stored_version() < 2 {
                format!(", read through the {} adapter", r.schema)
            } else {
                String::new()
            }
        ),
        Ok(Decoded::Run(r)) => format!("run {}: {} records", r.name, r.record_digests.len()),
        Ok(Decoded::Task(t)) => format!("task {} ({}), task hash {}", t.id, t.source, t.task_hash),
        Ok(Decoded::Suite(s)) => format!(
            "task suite {}, suite hash {}, {} tasks",
            s.version,
            s.suite_hash,
            s.task_digests.len()
        ),
        Err(e) => format!("DOES NOT DECODE: {e}"),
    }
}

/// ` REPORTED` after a referrer that is a reported import.
fn mark(schema: &Schema, store: &Store, d: &Digest) -> &'static str {
    let reported = schema.kind == ObjectKind::Import
        && store
            .get_json::<ImportObject>(d)
            .is_ok_and(|i| i.provenance == crate::store::reported::Provenance::Reported);
    if reported { "  REPORTED" } else { "" }
}

/// What a referenced digest is, or why it cannot be read.
fn status(store: &Store, d: &Digest) -> String {
    match store.get(d) {
        Ok(b) => match object::classify(&b) {
            Ok(Content::Object(c)) => format!("{} object", c.schema.kind),
            Ok(Content::Text) => format!("text, {} bytes", b.len()),
            Ok(Content::Binary) => format!("binary, {} bytes", b.len()),
            Err(_) => "MALFORMED object".to_string(),
        },
        Err(StoreError::Missing { .. }) => "MISSING".to_string(),
        Err(StoreError::Corrupt { .. }) => "CORRUPT".to_string(),
        Err(e) => format!("unreadable: {e}"),
    }
}
