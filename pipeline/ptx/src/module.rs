//! The parsed form of a PTX module: functions (kernels and device
//! functions) with their parameters, performance directives, declarations
//! and instructions, plus module-level declarations. Plain data, all
//! `Serialize`; sizes and alignments are computed with saturating
//! arithmetic, so no method here panics.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::family::{Family, family_of};

/// One parsed `.ptx` file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Module {
    /// `.version MAJOR.MINOR`.
    pub version: Option<(u32, u32)>,
    /// `.target` list, e.g. `["sm_90a"]` or `["sm_90a", "debug"]`.
    pub targets: Vec<String>,
    /// `.address_size` (32 or 64).
    pub address_size: Option<u32>,
    /// Every `.entry` and `.func`, definitions and body-less declarations,
    /// in source order.
    pub functions: Vec<Function>,
    /// Module-level variable declarations (`.global`, `.const`, `.shared`, ...).
    pub globals: Vec<Declaration>,
}

impl Module {
    /// Kernels defined (with a body) in this module, in source order.
    pub fn entries(&self) -> impl Iterator<Item = &Function> {
        self.functions
            .iter()
            .filter(|f| f.kind == FunctionKind::Entry && f.has_body)
    }

    /// The defined kernel called `name`.
    pub fn entry(&self, name: &str) -> Option<&Function> {
        self.entries().find(|f| f.name == name)
    }

    /// The function or kernel called `name`: its definition when the
    /// module has one, else its first declaration.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions
            .iter()
            .find(|f| f.name == name && f.has_body)
            .or_else(|| self.functions.iter().find(|f| f.name == name))
    }

    /// Whether a function or kernel called `name` has a body in this module.
    pub fn defines(&self, name: &str) -> bool {
        self.functions.iter().any(|f| f.name == name && f.has_body)
    }

    /// All instructions of all functions, in source order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.functions.iter().flat_map(|f| f.instructions.iter())
    }
}

/// `.entry` (kernel) or `.func` (device function).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    Entry,
    Func,
}

/// A kernel or device function, with or without a body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Function {
    pub name: String,
    pub kind: FunctionKind,
    /// Linkage keyword without its dot: `visible`, `extern`, `weak`, `common`.
    pub linkage: Option<String>,
    pub params: Vec<Param>,
    /// Return parameters of a `.func` (`.func (.param .b32 r) f(...)`).
    pub returns: Vec<Param>,
    /// Performance directives between the signature and the body.
    pub directives: Vec<PerfDirective>,
    /// False for prototypes and `.extern` declarations.
    pub has_body: bool,
    /// Every instruction of the body, nested `{ }` scopes included.
    pub instructions: Vec<Instruction>,
    /// Declarations inside the body (`.reg`, `.shared`, `.local`, `.param`, ...),
    /// nested scopes included.
    pub declarations: Vec<Declaration>,
    /// Labels defined in the body, in source order.
    pub labels: Vec<String>,
    /// Line of the first token of the header (linkage or `.entry`/`.func`).
    pub line: u32,
    /// The body's bytes in the source: from just after its `{` to its closing `}` (`None`
    /// for prototypes), so that a tool can insert text at a body's ends.
    #[serde(skip)]
    pub body: Option<std::ops::Range<usize>>,
}

impl Function {
    /// The first performance directive called `name` (without the dot).
    pub fn directive(&self, name: &str) -> Option<&PerfDirective> {
        self.directives.iter().find(|d| d.name == name)
    }

    /// Total bytes of the parameter buffer, laying parameters out in order
    /// with their alignment (as the CUDA driver does for kernel arguments).
    pub fn param_bytes(&self) -> u64 {
        let mut offset: u64 = 0;
        for p in &self.params {
            let align = p.alignment().max(1);
            offset = offset.div_ceil(align).saturating_mul(align);
            offset = offset.saturating_add(p.size_bytes());
        }
        offset
    }

    /// Bytes of statically sized `.shared` variables declared in the body.
    /// Unsized (`[]`) arrays and unknown types count as zero.
    pub fn static_shared_bytes(&self) -> u64 {
        self.declarations
            .iter()
            .filter(|d| d.space == StateSpace::Shared)
            .map(|d| d.size_bytes().unwrap_or(0))
            .fold(0u64, u64::saturating_add)
    }
}

/// Scalar types that can appear in parameter and variable declarations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParamType {
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    BF16,
    BF16x2,
    F32,
    F64,
    Pred,
    TexRef,
    SamplerRef,
    SurfRef,
}

impl ParamType {
    /// Every type, for iteration.
    pub const ALL: [ParamType; 23] = [
        ParamType::B8,
        ParamType::B16,
        ParamType::B32,
        ParamType::B64,
        ParamType::B128,
        ParamType::U8,
        ParamType::U16,
        ParamType::U32,
        ParamType::U64,
        ParamType::S8,
        ParamType::S16,
        ParamType::S32,
        ParamType::S64,
        ParamType::F16,
        ParamType::F16x2,
        ParamType::BF16,
        ParamType::BF16x2,
        ParamType::F32,
        ParamType::F64,
        ParamType::Pred,
        ParamType::TexRef,
        ParamType::SamplerRef,
        ParamType::SurfRef,
    ];

    /// PTX spelling without the dot, e.g. `"b32"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::B8 => "b8",
            ParamType::B16 => "b16",
            ParamType::B32 => "b32",
            ParamType::B64 => "b64",
            ParamType::B128 => "b128",
            ParamType::U8 => "u8",
            ParamType::U16 => "u16",
            ParamType::U32 => "u32",
            ParamType::U64 => "u64",
            ParamType::S8 => "s8",
            ParamType::S16 => "s16",
            ParamType::S32 => "s32",
            ParamType::S64 => "s64",
            ParamType::F16 => "f16",
            ParamType::F16x2 => "f16x2",
            ParamType::BF16 => "bf16",
            ParamType::BF16x2 => "bf16x2",
            ParamType::F32 => "f32",
            ParamType::F64 => "f64",
            ParamType::Pred => "pred",
            ParamType::TexRef => "texref",
            ParamType::SamplerRef => "samplerref",
            ParamType::SurfRef => "surfref",
        }
    }

    /// Parses a type keyword, with or without its leading dot.
    pub fn from_keyword(word: &str) -> Option<ParamType> {
        let w = word.strip_prefix('.').unwrap_or(word);
        ParamType::ALL.into_iter().find(|t| t.as_str() == w)
    }

    /// Size in bytes. `.pred` counts as 1 byte; the opaque texture,
    /// sampler and surface references are 64-bit handles.
    pub fn size_bytes(self) -> u64 {
        match self {
            ParamType::B8 | ParamType::U8 | ParamType::S8 | ParamType::Pred => 1,
            ParamType::B16 | ParamType::U16 | ParamType::S16 | ParamType::F16 | ParamType::BF16 => {
                2
            }
            ParamType::B32
            | ParamType::U32
            | ParamType::S32
            | ParamType::F32
            | ParamType::F16x2
            | ParamType::BF16x2 => 4,
            ParamType::B64
            | ParamType::U64
            | ParamType::S64
            | ParamType::F64
            | ParamType::TexRef
            | ParamType::SamplerRef
            | ParamType::SurfRef => 8,
            ParamType::B128 => 16,
        }
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ParamType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One kernel or function parameter (or `.func` return value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Param {
    pub name: String,
    pub ty: ParamType,
    /// `Some(n)` for `name[n]`.
    pub array_len: Option<u64>,
    /// Explicit `.align N` of the parameter itself (before any `.ptr`).
    pub align: Option<u32>,
    /// The raw pointer attribute group, e.g. `.ptr .global .align 16`.
    pub state_space_attr: Option<String>,
    /// The `.align N` inside the `.ptr` group: alignment of the pointee,
    /// not of the parameter.
    pub ptr_align: Option<u32>,
    /// True for `.reg` parameters of a `.func` (instead of `.param`).
    pub is_reg: bool,
}

impl Param {
    /// Element size times array length.
    pub fn size_bytes(&self) -> u64 {
        self.ty
            .size_bytes()
            .saturating_mul(self.array_len.unwrap_or(1))
    }

    /// The explicit `.align`, or else the natural alignment of the element type.
    pub fn alignment(&self) -> u64 {
        self.align
            .map(u64::from)
            .unwrap_or_else(|| self.ty.size_bytes())
    }
}

/// A performance-tuning directive such as `.maxntid 384, 1, 1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PerfDirective {
    /// Name without the dot: `maxntid`, `reqntid`, `minnctapersm`,
    /// `maxnreg`, `explicitcluster`, `reqnctapercluster`,
    /// `maxclusterrank`, `noreturn`, `pragma`, ...
    pub name: String,
    /// Numeric arguments, e.g. `[384, 1, 1]`.
    pub values: Vec<u64>,
    /// String arguments (only `.pragma "nounroll";` has them), without quotes.
    pub strings: Vec<String>,
}

/// One instruction statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Instruction {
    pub line: u32,
    /// Byte offset in the source where the instruction starts: its guard's `@`, else its
    /// opcode (after any labels and `.loc` lines), so that a tool can insert text before it.
    #[serde(skip)]
    pub start: usize,
    /// Guard predicate as written, `%p1` or `!%p1` (without the `@`).
    pub predicate: Option<String>,
    /// Full dotted opcode, e.g. `wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`.
    pub opcode: String,
    /// Operand text with comments removed and each run of whitespace
    /// between tokens collapsed to one space; trimmed.
    pub operands: String,
    /// Nesting depth of `{ }` scopes inside the function body (0 = top
    /// level of the body; inline-asm blocks are usually at 1).
    pub depth: u32,
}

/// What a `call` instruction calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallTarget {
    /// `call f, ...`: a function symbol.
    Direct(String),
    /// `call %rd1, ...`: through a register (function pointer).
    Indirect(String),
}

impl Instruction {
    /// The family of this instruction, if it belongs to one.
    pub fn family(&self) -> Option<Family> {
        family_of(&self.opcode)
    }

    /// The mnemonic: the opcode up to its first dot (`ld` for `ld.global.f32`).
    pub fn mnemonic(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// For `call` instructions, the callee: the first operand after an
    /// optional `(return values),` group.
    pub fn call_target(&self) -> Option<CallTarget> {
        if self.mnemonic() != "call" {
            return None;
        }
        let mut rest = self.operands.trim_start();
        if rest.starts_with('(') {
            let close = rest.find(')')?;
            rest = rest.get(close + 1..)?.trim_start();
            rest = rest.strip_prefix(',')?.trim_start();
        }
        let end = rest
            .find(|c: char| c == ',' || c == '(' || c.is_whitespace())
            .unwrap_or(rest.len());
        let callee = rest.get(..end)?;
        if callee.is_empty() {
            None
        } else if callee.starts_with('%') {
            Some(CallTarget::Indirect(callee.to_string()))
        } else {
            Some(CallTarget::Direct(callee.to_string()))
        }
    }
}

/// PTX state spaces a variable can be declared in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StateSpace {
    Reg,
    Sreg,
    Const,
    Global,
    Local,
    Param,
    Shared,
    Tex,
}

impl StateSpace {
    /// Parses `.shared`, `.shared::cta`, `.global`, ... (the `::` qualifier is dropped).
    pub fn from_keyword(word: &str) -> Option<StateSpace> {
        let w = word.strip_prefix('.').unwrap_or(word);
        let w = w.split("::").next().unwrap_or(w);
        Some(match w {
            "reg" => StateSpace::Reg,
            "sreg" => StateSpace::Sreg,
            "const" => StateSpace::Const,
            "global" => StateSpace::Global,
            "local" => StateSpace::Local,
            "param" => StateSpace::Param,
            "shared" => StateSpace::Shared,
            "tex" => StateSpace::Tex,
            _ => return None,
        })
    }
}

/// One variable of a declaration: `name`, `name<N>`, `name[a][b]`, `name = init`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variable {
    pub name: String,
    /// `Some(n)` for a parameterized register range `%r<n>`.
    pub count: Option<u32>,
    /// Array dimensions; `None` for an unsized `[]`.
    pub dims: Vec<Option<u64>>,
    /// Initializer text after `=`, normalised like instruction operands.
    pub initializer: Option<String>,
}

/// A variable declaration statement (`.reg .b32 %r<100>;`,
/// `.extern .shared .align 16 .b8 smem[];`, `.global .u32 x = 1;`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Declaration {
    pub line: u32,
    pub space: StateSpace,
    /// Linkage keyword without its dot (`extern`, `visible`, `weak`, `common`).
    pub linkage: Option<String>,
    pub align: Option<u32>,
    /// Vector width of `.v2`/`.v4`/`.v8`.
    pub vector: Option<u32>,
    /// Type keyword without its dot, e.g. `b32`, `pred`, `texref`.
    pub ty: String,
    pub variables: Vec<Variable>,
}

impl Declaration {
    /// Bytes of one element: type size times vector width; `None` for an unknown type.
    pub fn element_bytes(&self) -> Option<u64> {
        let base = ParamType::from_keyword(&self.ty)?.size_bytes();
        Some(base.saturating_mul(u64::from(self.vector.unwrap_or(1))))
    }

    /// Total bytes of all variables; `None` if the type is unknown or an
    /// array is unsized.
    pub fn size_bytes(&self) -> Option<u64> {
        let elem = self.element_bytes()?;
        let mut total: u64 = 0;
        for v in &self.variables {
            let mut n = u64::from(v.count.unwrap_or(1));
            for d in &v.dims {
                n = n.saturating_mul((*d)?);
            }
            total = total.saturating_add(n.saturating_mul(elem));
        }
        Some(total)
    }
}
