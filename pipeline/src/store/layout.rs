//! The store's folder names, which the destination checks also read (so they depend on nothing).

/// The layout folder under the store root.
pub const LAYOUT_DIR: &str = "v1";
/// Where objects live under the layout folder.
pub const OBJECTS_DIR: &str = "blake3";
/// Where in-flight writes live under the layout folder.
pub const TEMP_DIR: &str = "tmp";
/// The name prefix of in-flight writes.
pub const TEMP_PREFIX: &str = ".tmp-";
