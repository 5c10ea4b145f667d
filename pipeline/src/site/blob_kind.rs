//! What the text blobs a record names hold, as pages label and anchor them.

use crate::digest::Digest;
use crate::record::Record;

/// Every text blob `record` names, with what it holds.
pub fn text_blobs(record: &Record) -> impl Iterator<Item = (BlobKind, Digest)> + '_ {
    [
        (BlobKind::Prompt, record.prompt_digest),
        (BlobKind::Response, record.response_digest),
        (BlobKind::KernelSource, record.kernel_source_digest),
        (BlobKind::Ptx, record.ptx_digest),
        (BlobKind::Plan, Some(record.plan_digest)),
    ]
    .into_iter()
    .filter_map(|(k, d)| d.map(|d| (k, d)))
}

/// What a text blob of a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BlobKind {
    Prompt,
    Response,
    KernelSource,
    Ptx,
    Plan,
}

impl BlobKind {
    pub fn label(self) -> &'static str {
        match self {
            BlobKind::Prompt => "Prompt",
            BlobKind::Response => "Response",
            BlobKind::KernelSource => "Kernel source (CUDA C++)",
            BlobKind::Ptx => "PTX",
            BlobKind::Plan => "Launch plan",
        }
    }

    /// The record field that names it.
    pub fn field(self) -> &'static str {
        match self {
            BlobKind::Prompt => "prompt_digest",
            BlobKind::Response => "response_digest",
            BlobKind::KernelSource => "kernel_source_digest",
            BlobKind::Ptx => "ptx_digest",
            BlobKind::Plan => "plan_digest",
        }
    }

    /// The extension of a download of it.
    pub fn extension(self) -> &'static str {
        match self {
            BlobKind::Prompt | BlobKind::Response => "txt",
            BlobKind::KernelSource => "cu",
            BlobKind::Ptx => "ptx",
            BlobKind::Plan => "yaml",
        }
    }

    /// An id for anchors.
    pub fn anchor(self) -> &'static str {
        match self {
            BlobKind::Prompt => "prompt",
            BlobKind::Response => "response",
            BlobKind::KernelSource => "source",
            BlobKind::Ptx => "ptx",
            BlobKind::Plan => "plan",
        }
    }
}
