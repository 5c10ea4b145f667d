//! Parser: builds a [`Module`] from PTX source text. A hand-written,
//! iterative (no recursion) parser over the lexer's tokens; it never
//! panics, whatever the input, and reports the first error with its
//! line and column. It understands the module structure (directives,
//! functions, signatures, performance directives, declarations, debug
//! sections) and splits bodies into labels, declarations and
//! instructions; instruction operands are kept as normalised text.

use crate::error::{ParseError, ParseErrorKind};
use crate::lexer::{Token, TokenKind, join, lex};
use crate::module::{
    Declaration, Function, FunctionKind, Instruction, Module, Param, ParamType, PerfDirective,
    StateSpace, Variable,
};

/// Parses a whole PTX module.
///
/// Never panics, for any input. On failure the error carries the 1-based
/// line and column of the offending token.
pub fn parse(src: &str) -> Result<Module, ParseError> {
    let tokens = lex(src)?;
    Parser {
        toks: tokens,
        pos: 0,
    }
    .module()
}

/// Performance directives accepted between a signature and its body.
const PERF_DIRECTIVES: &[&str] = &[
    "maxntid",
    "reqntid",
    "minnctapersm",
    "maxnctapersm",
    "maxnreg",
    "explicitcluster",
    "reqnctapercluster",
    "maxclusterrank",
    "blocksareclusters",
    "noreturn",
    "abi_preserve",
    "abi_preserve_control",
    "pragma",
];

const LINKAGES: &[&str] = &[".visible", ".extern", ".weak", ".common"];

type PResult<T> = Result<T, ParseError>;

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    pos: usize,
}

fn err_at(tok: &Token<'_>, kind: ParseErrorKind, message: impl Into<String>) -> ParseError {
    ParseError::new(kind, tok.line, tok.col, message)
}

/// Parses a PTX integer literal: decimal, `0x` hex, `0b` binary, leading-0
/// octal, optional `U` suffix.
fn parse_int(text: &str) -> Option<u64> {
    let t = text.strip_suffix(['U', 'u']).unwrap_or(text);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(t.get(1..)?, 8).ok()
    } else {
        t.parse().ok()
    }
}

fn strip_quotes(s: &str) -> String {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
        .to_string()
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token<'a> {
        self.peek_n(0)
    }

    fn peek_n(&self, n: usize) -> Token<'a> {
        match self.toks.get(self.pos.saturating_add(n)) {
            Some(t) => *t,
            // The lexer always ends the list with Eof, and `bump` never
            // moves past it; this arm only guards against an empty list.
            None => self.toks.last().copied().unwrap_or(Token {
                kind: TokenKind::Eof,
                text: "",
                line: 1,
                col: 1,
                start: 0,
                end: 0,
            }),
        }
    }

    fn bump(&mut self) -> Token<'a> {
        let t = self.peek();
        if t.kind != TokenKind::Eof {
            self.pos += 1;
        }
        t
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.peek().is_punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char, what: &str) -> PResult<Token<'a>> {
        let t = self.peek();
        if t.is_punct(c) {
            Ok(self.bump())
        } else {
            let kind = if t.kind == TokenKind::Eof {
                ParseErrorKind::UnexpectedEof
            } else {
                ParseErrorKind::UnexpectedToken
            };
            Err(err_at(
                &t,
                kind,
                format!("expected `{c}` {what}, found {}", t.describe()),
            ))
        }
    }

    fn expect_int(&mut self, what: &str) -> PResult<u64> {
        let t = self.peek();
        if t.kind != TokenKind::Number {
            return Err(err_at(
                &t,
                ParseErrorKind::UnexpectedToken,
                format!("expected a number {what}, found {}", t.describe()),
            ));
        }
        self.bump();
        parse_int(t.text).ok_or_else(|| {
            err_at(
                &t,
                ParseErrorKind::BadNumber,
                format!("bad number `{}` {what}", t.text),
            )
        })
    }

    fn expect_u32(&mut self, what: &str) -> PResult<u32> {
        let t = self.peek();
        let v = self.expect_int(what)?;
        u32::try_from(v).map_err(|_| {
            err_at(
                &t,
                ParseErrorKind::BadNumber,
                format!("number `{}` {what} is too large", t.text),
            )
        })
    }

    /// An identifier (not a directive): function, parameter or variable name.
    fn expect_name(&mut self, what: &str) -> PResult<Token<'a>> {
        let t = self.peek();
        if t.kind == TokenKind::Word && !t.text.starts_with('.') {
            Ok(self.bump())
        } else {
            let kind = if t.kind == TokenKind::Eof {
                ParseErrorKind::UnexpectedEof
            } else {
                ParseErrorKind::UnexpectedToken
            };
            Err(err_at(
                &t,
                kind,
                format!("expected {what}, found {}", t.describe()),
            ))
        }
    }

    /// Consumes every token on the line of `first` (line-based debug
    /// directives such as `.file` and `.loc`).
    fn skip_line(&mut self, line: u32) {
        while self.peek().kind != TokenKind::Eof && self.peek().line == line {
            self.bump();
        }
    }

    /// Consumes tokens up to and including the next `;`.
    fn skip_statement(&mut self, start: &Token<'_>) -> PResult<()> {
        loop {
            let t = self.bump();
            match t.kind {
                TokenKind::Punct(';') => return Ok(()),
                TokenKind::Eof => {
                    return Err(err_at(
                        start,
                        ParseErrorKind::MissingSemicolon,
                        format!("`{}` is not terminated by `;`", start.text),
                    ));
                }
                _ => {}
            }
        }
    }

    /// Consumes a balanced `{ ... }` block starting at the current `{`.
    fn skip_block(&mut self) -> PResult<()> {
        let open = self.bump();
        let mut depth: usize = 1;
        loop {
            let t = self.bump();
            match t.kind {
                TokenKind::Punct('{') => depth += 1,
                TokenKind::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                TokenKind::Eof => {
                    return Err(err_at(
                        &open,
                        ParseErrorKind::UnterminatedBlock,
                        "unterminated `{`",
                    ));
                }
                _ => {}
            }
        }
    }

    fn module(mut self) -> PResult<Module> {
        let mut m = Module::default();
        loop {
            let t = self.peek();
            match t.kind {
                TokenKind::Eof => return Ok(m),
                TokenKind::Punct(';') => {
                    self.bump();
                }
                TokenKind::Word if t.text.starts_with('.') => self.module_directive(&mut m)?,
                _ => {
                    return Err(err_at(
                        &t,
                        ParseErrorKind::UnexpectedToken,
                        format!(
                            "expected a directive at module level, found {}",
                            t.describe()
                        ),
                    ));
                }
            }
        }
    }

    fn module_directive(&mut self, m: &mut Module) -> PResult<()> {
        let t = self.peek();
        match t.text {
            ".version" => {
                self.bump();
                let v = self.peek();
                let bad = || {
                    err_at(
                        &v,
                        ParseErrorKind::BadVersion,
                        format!(
                            "expected MAJOR.MINOR after `.version`, found {}",
                            v.describe()
                        ),
                    )
                };
                if v.kind != TokenKind::Number {
                    return Err(bad());
                }
                let (major, minor) = v.text.split_once('.').ok_or_else(bad)?;
                let major = major.parse().map_err(|_| bad())?;
                let minor = minor.parse().map_err(|_| bad())?;
                self.bump();
                m.version = Some((major, minor));
            }
            ".target" => {
                self.bump();
                loop {
                    let name = self.expect_name("a target name after `.target`")?;
                    m.targets.push(name.text.to_string());
                    if !self.eat_punct(',') {
                        break;
                    }
                }
            }
            ".address_size" => {
                self.bump();
                m.address_size = Some(self.expect_u32("after `.address_size`")?);
            }
            ".file" | ".loc" => {
                self.bump();
                self.skip_line(t.line);
            }
            ".section" => {
                self.bump();
                // The section name and any flags on the same line.
                while !self.peek().is_punct('{')
                    && self.peek().kind != TokenKind::Eof
                    && self.peek().line == t.line
                {
                    self.bump();
                }
                if self.peek().is_punct('{') {
                    self.skip_block()?;
                }
            }
            ".pragma" | ".alias" => {
                self.bump();
                self.skip_statement(&t)?;
            }
            _ => {
                let mut linkage = None;
                while LINKAGES.iter().any(|l| self.peek().is_word(l)) {
                    linkage = Some(self.bump().text.trim_start_matches('.').to_string());
                }
                let k = self.peek();
                match k.text {
                    ".entry" | ".func" if k.kind == TokenKind::Word => {
                        let f = self.function(linkage, t.line)?;
                        m.functions.push(f);
                    }
                    _ if k.is_dot_word() && StateSpace::from_keyword(k.text).is_some() => {
                        let d = self.declaration(linkage)?;
                        m.globals.push(d);
                    }
                    _ => {
                        let (kind, what) = if k.is_dot_word() {
                            (
                                ParseErrorKind::UnknownDirective,
                                "unknown module-level directive",
                            )
                        } else if k.kind == TokenKind::Eof {
                            (
                                ParseErrorKind::UnexpectedEof,
                                "expected a declaration after linkage, found",
                            )
                        } else {
                            (
                                ParseErrorKind::UnexpectedToken,
                                "expected a declaration after linkage, found",
                            )
                        };
                        return Err(err_at(&k, kind, format!("{what} {}", k.describe())));
                    }
                }
            }
        }
        Ok(())
    }

    /// `.entry`/`.func` header and body (or `;`).
    fn function(&mut self, linkage: Option<String>, line: u32) -> PResult<Function> {
        let kw = self.bump();
        let kind = if kw.text == ".entry" {
            FunctionKind::Entry
        } else {
            FunctionKind::Func
        };
        let returns = if kind == FunctionKind::Func && self.peek().is_punct('(') {
            self.param_list()?
        } else {
            Vec::new()
        };
        let name = self.expect_name("a function name")?.text.to_string();
        let params = if self.peek().is_punct('(') {
            self.param_list()?
        } else {
            Vec::new()
        };
        let directives = self.perf_directives()?;
        let mut f = Function {
            name,
            kind,
            linkage,
            params,
            returns,
            directives,
            has_body: false,
            instructions: Vec::new(),
            declarations: Vec::new(),
            labels: Vec::new(),
            line,
            body: None,
        };
        let t = self.peek();
        if t.is_punct(';') {
            self.bump();
        } else if t.is_punct('{') {
            self.body(&mut f)?;
            f.has_body = true;
        } else {
            let kind = if t.kind == TokenKind::Eof {
                ParseErrorKind::UnexpectedEof
            } else {
                ParseErrorKind::UnexpectedToken
            };
            return Err(err_at(
                &t,
                kind,
                format!(
                    "expected `{{` or `;` after the header of `{}`, found {}",
                    f.name,
                    t.describe()
                ),
            ));
        }
        Ok(f)
    }

    fn perf_directives(&mut self) -> PResult<Vec<PerfDirective>> {
        let mut out = Vec::new();
        loop {
            let t = self.peek();
            if !t.is_dot_word() {
                return Ok(out);
            }
            let name = t.text.trim_start_matches('.');
            if !PERF_DIRECTIVES.contains(&name) {
                return Err(err_at(
                    &t,
                    ParseErrorKind::UnknownDirective,
                    format!(
                        "unexpected `{}` between a function signature and its body",
                        t.text
                    ),
                ));
            }
            self.bump();
            let mut d = PerfDirective {
                name: name.to_string(),
                values: Vec::new(),
                strings: Vec::new(),
            };
            if name == "pragma" {
                loop {
                    let s = self.bump();
                    match s.kind {
                        TokenKind::Str => d.strings.push(strip_quotes(s.text)),
                        TokenKind::Punct(',') => {}
                        TokenKind::Punct(';') => break,
                        _ => {
                            return Err(err_at(
                                &s,
                                ParseErrorKind::UnexpectedToken,
                                format!(
                                    "expected a string or `;` in `.pragma`, found {}",
                                    s.describe()
                                ),
                            ));
                        }
                    }
                }
            } else if self.peek().kind == TokenKind::Number {
                d.values.push(self.expect_int(&format!("in `{}`", t.text))?);
                while self.peek().is_punct(',') {
                    self.bump();
                    d.values.push(self.expect_int(&format!("in `{}`", t.text))?);
                }
            }
            out.push(d);
        }
    }

    /// `( param, param, ... )`.
    fn param_list(&mut self) -> PResult<Vec<Param>> {
        let open = self.bump();
        let mut params = Vec::new();
        if self.eat_punct(')') {
            return Ok(params);
        }
        loop {
            params.push(self.param(&open)?);
            let t = self.bump();
            match t.kind {
                TokenKind::Punct(',') => {}
                TokenKind::Punct(')') => return Ok(params),
                TokenKind::Eof => {
                    return Err(err_at(
                        &open,
                        ParseErrorKind::UnterminatedParamList,
                        "parameter list is not closed by `)`",
                    ));
                }
                _ => {
                    return Err(err_at(
                        &t,
                        ParseErrorKind::UnterminatedParamList,
                        format!(
                            "expected `,` or `)` in parameter list, found {}",
                            t.describe()
                        ),
                    ));
                }
            }
        }
    }

    fn param(&mut self, open: &Token<'_>) -> PResult<Param> {
        let space = self.peek();
        let is_reg = match space.text {
            ".param" if space.kind == TokenKind::Word => false,
            ".reg" if space.kind == TokenKind::Word => true,
            _ => {
                let kind = if space.kind == TokenKind::Eof {
                    return Err(err_at(
                        open,
                        ParseErrorKind::UnterminatedParamList,
                        "parameter list is not closed by `)`",
                    ));
                } else {
                    ParseErrorKind::UnexpectedToken
                };
                return Err(err_at(
                    &space,
                    kind,
                    format!(
                        "expected `.param` or `.reg` in parameter list, found {}",
                        space.describe()
                    ),
                ));
            }
        };
        self.bump();
        let mut ty = None;
        let mut align = None;
        let mut ptr_align = None;
        let mut ptr_attr: Vec<String> = Vec::new();
        while self.peek().is_dot_word() {
            let a = self.bump();
            match a.text {
                ".align" => {
                    let n = self.expect_u32("after `.align`")?;
                    if ptr_attr.is_empty() {
                        align = Some(n);
                    } else {
                        ptr_align = Some(n);
                        ptr_attr.push(format!(".align {n}"));
                    }
                }
                ".ptr" => ptr_attr.push(".ptr".to_string()),
                ".global" | ".shared" | ".const" | ".local" if !ptr_attr.is_empty() => {
                    ptr_attr.push(a.text.to_string());
                }
                _ => match ParamType::from_keyword(a.text) {
                    Some(t) => ty = Some(t),
                    None => {
                        return Err(err_at(
                            &a,
                            ParseErrorKind::UnexpectedToken,
                            format!("unknown parameter attribute or type `{}`", a.text),
                        ));
                    }
                },
            }
        }
        let name_tok = self.expect_name("a parameter name")?;
        let ty = ty.ok_or_else(|| {
            err_at(
                &name_tok,
                ParseErrorKind::UnexpectedToken,
                format!("parameter `{}` has no type", name_tok.text),
            )
        })?;
        let mut array_len = None;
        if self.peek().is_punct('[') {
            self.bump();
            array_len = Some(self.expect_int("as the parameter array length")?);
            self.expect_punct(']', "after the parameter array length")?;
        }
        Ok(Param {
            name: name_tok.text.to_string(),
            ty,
            array_len,
            align,
            state_space_attr: (!ptr_attr.is_empty()).then(|| ptr_attr.join(" ")),
            ptr_align,
            is_reg,
        })
    }

    /// A variable declaration starting at its state-space keyword, up to and including `;`.
    fn declaration(&mut self, linkage: Option<String>) -> PResult<Declaration> {
        let sp = self.bump();
        let space = StateSpace::from_keyword(sp.text).ok_or_else(|| {
            err_at(
                &sp,
                ParseErrorKind::UnexpectedToken,
                format!("`{}` is not a state space", sp.text),
            )
        })?;
        let mut d = Declaration {
            line: sp.line,
            space,
            linkage,
            align: None,
            vector: None,
            ty: String::new(),
            variables: Vec::new(),
        };
        while self.peek().is_dot_word() {
            let a = self.bump();
            match a.text {
                ".align" => d.align = Some(self.expect_u32("after `.align`")?),
                ".v2" => d.vector = Some(2),
                ".v4" => d.vector = Some(4),
                ".v8" => d.vector = Some(8),
                ".attribute" => {
                    self.expect_punct('(', "after `.attribute`")?;
                    loop {
                        let t = self.bump();
                        match t.kind {
                            TokenKind::Punct(')') => break,
                            TokenKind::Eof => {
                                return Err(err_at(
                                    &a,
                                    ParseErrorKind::UnexpectedEof,
                                    "`.attribute(` is not closed",
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                other => d.ty = other.trim_start_matches('.').to_string(),
            }
        }
        if d.ty.is_empty() {
            let t = self.peek();
            return Err(err_at(
                &t,
                ParseErrorKind::UnexpectedToken,
                format!(
                    "expected a type in `{}` declaration, found {}",
                    sp.text,
                    t.describe()
                ),
            ));
        }
        loop {
            let name = self.expect_name("a variable name")?;
            let mut v = Variable {
                name: name.text.to_string(),
                count: None,
                dims: Vec::new(),
                initializer: None,
            };
            if self.eat_punct('<') {
                v.count = Some(self.expect_u32("in a register range")?);
                self.expect_punct('>', "after a register range")?;
            }
            while self.eat_punct('[') {
                if self.eat_punct(']') {
                    v.dims.push(None);
                } else {
                    v.dims.push(Some(self.expect_int("as an array dimension")?));
                    self.expect_punct(']', "after an array dimension")?;
                }
            }
            if self.eat_punct('=') {
                v.initializer = Some(self.initializer(&sp)?);
            }
            d.variables.push(v);
            let t = self.bump();
            match t.kind {
                TokenKind::Punct(',') => {}
                TokenKind::Punct(';') => return Ok(d),
                TokenKind::Eof => {
                    return Err(err_at(
                        &sp,
                        ParseErrorKind::MissingSemicolon,
                        format!("`{}` declaration is not terminated by `;`", sp.text),
                    ));
                }
                _ => {
                    return Err(err_at(
                        &t,
                        ParseErrorKind::UnexpectedToken,
                        format!("expected `,` or `;` in declaration, found {}", t.describe()),
                    ));
                }
            }
        }
    }

    /// Initializer tokens up to (not including) a `,` or `;` outside braces.
    fn initializer(&mut self, decl: &Token<'_>) -> PResult<String> {
        let start = self.pos;
        let mut depth: usize = 0;
        loop {
            let t = self.peek();
            match t.kind {
                TokenKind::Punct('{') | TokenKind::Punct('(') => depth += 1,
                TokenKind::Punct('}') | TokenKind::Punct(')') => {
                    if depth == 0 {
                        return Err(err_at(
                            &t,
                            ParseErrorKind::UnexpectedToken,
                            format!("unbalanced {} in initializer", t.describe()),
                        ));
                    }
                    depth -= 1;
                }
                TokenKind::Punct(',') | TokenKind::Punct(';') if depth == 0 => break,
                TokenKind::Eof => {
                    return Err(err_at(
                        decl,
                        ParseErrorKind::MissingSemicolon,
                        "initializer is not terminated by `;`",
                    ));
                }
                _ => {}
            }
            self.bump();
        }
        Ok(join(self.toks.get(start..self.pos).unwrap_or(&[])))
    }

    /// A function body, from its `{` to the matching `}`.
    fn body(&mut self, f: &mut Function) -> PResult<()> {
        let mut open: Vec<Token<'a>> = vec![self.bump()];
        let inside = open[0].end;
        loop {
            let t = self.peek();
            let depth = u32::try_from(open.len().saturating_sub(1)).unwrap_or(u32::MAX);
            match t.kind {
                TokenKind::Eof => {
                    let innermost = open.last().copied().unwrap_or(t);
                    return Err(err_at(
                        &innermost,
                        ParseErrorKind::UnterminatedBlock,
                        format!("unterminated `{{` in the body of `{}`", f.name),
                    ));
                }
                TokenKind::Punct('{') => open.push(self.bump()),
                TokenKind::Punct('}') => {
                    self.bump();
                    open.pop();
                    if open.is_empty() {
                        f.body = Some(inside..t.start);
                        return Ok(());
                    }
                }
                TokenKind::Punct(';') => {
                    self.bump();
                }
                TokenKind::Punct('@') => {
                    self.bump();
                    let neg = self.eat_punct('!');
                    let p = self.expect_name("a guard predicate after `@`")?;
                    let pred = if neg {
                        format!("!{}", p.text)
                    } else {
                        p.text.to_string()
                    };
                    let ins = self.instruction(Some(pred), t.line, depth, t.start)?;
                    f.instructions.push(ins);
                }
                TokenKind::Word if t.text.starts_with('.') => match t.text {
                    ".loc" | ".file" => {
                        self.bump();
                        self.skip_line(t.line);
                    }
                    ".pragma" => {
                        self.bump();
                        self.skip_statement(&t)?;
                    }
                    _ if StateSpace::from_keyword(t.text).is_some() => {
                        let d = self.declaration(None)?;
                        f.declarations.push(d);
                    }
                    ".extern" | ".visible" | ".weak" => {
                        let link = self.bump().text.trim_start_matches('.').to_string();
                        if !(self.peek().is_dot_word()
                            && StateSpace::from_keyword(self.peek().text).is_some())
                        {
                            let k = self.peek();
                            return Err(err_at(
                                &k,
                                ParseErrorKind::UnexpectedToken,
                                format!(
                                    "expected a declaration after `{}`, found {}",
                                    t.text,
                                    k.describe()
                                ),
                            ));
                        }
                        let d = self.declaration(Some(link))?;
                        f.declarations.push(d);
                    }
                    _ => {
                        return Err(err_at(
                            &t,
                            ParseErrorKind::UnknownDirective,
                            format!(
                                "unexpected directive `{}` in the body of `{}`",
                                t.text, f.name
                            ),
                        ));
                    }
                },
                TokenKind::Word if self.peek_n(1).is_punct(':') => {
                    self.bump();
                    self.bump();
                    f.labels.push(t.text.to_string());
                    let next = self.peek();
                    if [".callprototype", ".calltargets", ".branchtargets"]
                        .iter()
                        .any(|w| next.is_word(w))
                    {
                        self.skip_statement(&next)?;
                    }
                }
                TokenKind::Word => {
                    let ins = self.instruction(None, t.line, depth, t.start)?;
                    f.instructions.push(ins);
                }
                _ => {
                    return Err(err_at(
                        &t,
                        ParseErrorKind::UnexpectedToken,
                        format!(
                            "expected an instruction, label or directive, found {}",
                            t.describe()
                        ),
                    ));
                }
            }
        }
    }

    /// Opcode and operands up to and including `;`.
    fn instruction(
        &mut self,
        predicate: Option<String>,
        line: u32,
        depth: u32,
        at: usize,
    ) -> PResult<Instruction> {
        let op = self.peek();
        if op.kind != TokenKind::Word || !op.text.starts_with(|c: char| c.is_ascii_alphabetic()) {
            let kind = if op.kind == TokenKind::Eof {
                ParseErrorKind::UnexpectedEof
            } else {
                ParseErrorKind::UnexpectedToken
            };
            return Err(err_at(
                &op,
                kind,
                format!("expected an instruction opcode, found {}", op.describe()),
            ));
        }
        self.bump();
        let start = self.pos;
        let mut braces: Vec<Token<'a>> = Vec::new();
        loop {
            let t = self.peek();
            match t.kind {
                TokenKind::Punct(';') if braces.is_empty() => break,
                TokenKind::Punct('{') => braces.push(t),
                TokenKind::Punct('}') if braces.is_empty() => {
                    return Err(err_at(
                        &t,
                        ParseErrorKind::MissingSemicolon,
                        format!("expected `;` after `{}` before `}}`", op.text),
                    ));
                }
                TokenKind::Punct('}') => {
                    braces.pop();
                }
                TokenKind::Punct(';') => {
                    let b = braces.last().copied().unwrap_or(t);
                    return Err(err_at(
                        &b,
                        ParseErrorKind::UnterminatedBlock,
                        format!("`{{` in the operands of `{}` is not closed", op.text),
                    ));
                }
                TokenKind::Eof => {
                    return Err(err_at(
                        &op,
                        ParseErrorKind::MissingSemicolon,
                        format!("instruction `{}` is not terminated by `;`", op.text),
                    ));
                }
                _ => {}
            }
            self.bump();
        }
        let operands = join(self.toks.get(start..self.pos).unwrap_or(&[]));
        self.bump(); // the `;`
        Ok(Instruction {
            line,
            start: at,
            predicate,
            opcode: op.text.to_string(),
            operands,
            depth,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_literals() {
        assert_eq!(parse_int("42"), Some(42));
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("017"), Some(15));
        assert_eq!(parse_int("7U"), Some(7));
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("99999999999999999999999"), None);
        assert_eq!(parse_int("9.0"), None);
    }
}
