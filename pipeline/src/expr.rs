//! Integer expressions over a task's axes (`ceil_div(M, 128) * ceil_div(N, 256)`, `2*M*N*K`).
//!
//! Launch plans and task formulas are untrusted text (a model writes the plan), so an [`Expr`]
//! admits only arithmetic, the axis variables it is evaluated with, and a fixed set of
//! functions; evaluation never panics and reports overflow, division by zero and unknown names.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use evalexpr::{
    Context, ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes,
    EvalexprError, Function, HashMapContext, Node, Value,
};

/// Values of the named axes (and any other integer names) an expression may use.
pub type Bindings = BTreeMap<String, i64>;

/// Longest expression text accepted; plans come from model responses.
pub const MAX_LEN: usize = 512;

/// Functions an expression may call, with their arity.
pub const FUNCTIONS: &[(&str, usize, &str)] = &[
    (
        "ceil_div",
        2,
        "ceil_div(a, b): a divided by b, rounded up (b > 0)",
    ),
    (
        "round_up",
        2,
        "round_up(a, b): the smallest multiple of b that is >= a (b > 0)",
    ),
    ("min", 2, "min(a, b)"),
    ("max", 2, "max(a, b)"),
];

/// A parsed, checked expression. Invariant: uses only [`FUNCTIONS`], no assignment, no strings.
#[derive(Clone)]
pub struct Expr {
    source: String,
    tree: Node<DefaultNumericTypes>,
}

/// Why an expression could not be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    #[error("expression `{expr}` is longer than {MAX_LEN} characters")]
    TooLong { expr: String },
    #[error("expression `{expr}` does not parse: {reason}")]
    Syntax { expr: String, reason: String },
    #[error("expression `{expr}` calls `{name}`, which is not one of: {allowed}")]
    UnknownFunction {
        expr: String,
        name: String,
        allowed: String,
    },
    #[error("expression `{expr}` uses `{name}`, which is not defined here (known: {known})")]
    UnknownVariable {
        expr: String,
        name: String,
        known: String,
    },
    #[error("expression `{expr}` cannot be evaluated: {reason}")]
    Eval { expr: String, reason: String },
}

impl Expr {
    /// Parses `source`, accepting only arithmetic, integer literals, names and [`FUNCTIONS`].
    pub fn parse(source: &str) -> Result<Expr, ExprError> {
        let source = source.trim();
        if source.len() > MAX_LEN {
            return Err(ExprError::TooLong {
                expr: truncate(source),
            });
        }
        let syntax = |reason: String| ExprError::Syntax {
            expr: source.to_string(),
            reason,
        };
        if source.is_empty() {
            return Err(syntax("it is empty".into()));
        }
        // Strings, assignments and chaining have no place in a size formula.
        if let Some(c) = source
            .chars()
            .find(|c| matches!(c, '"' | '=' | ';' | '!' | '&' | '|' | '<' | '>' | '^'))
        {
            return Err(syntax(format!("character `{c}` is not allowed")));
        }
        let tree = evalexpr::build_operator_tree::<DefaultNumericTypes>(source)
            .map_err(|e| syntax(e.to_string()))?;
        for name in tree.iter_function_identifiers() {
            if !FUNCTIONS.iter().any(|(f, _, _)| *f == name) {
                return Err(ExprError::UnknownFunction {
                    expr: source.to_string(),
                    name: name.to_string(),
                    allowed: FUNCTIONS
                        .iter()
                        .map(|(f, _, _)| *f)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(Expr {
            source: source.to_string(),
            tree,
        })
    }

    /// The expression as written (trimmed).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Names of the variables the expression reads.
    pub fn variables(&self) -> BTreeSet<String> {
        self.tree
            .iter_variable_identifiers()
            .map(str::to_string)
            .collect()
    }

    /// Fails unless every variable is one of `known` (checked before any workload exists).
    pub fn check_variables<'a>(
        &self,
        known: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Result<(), ExprError> {
        for v in self.variables() {
            if !known.clone().into_iter().any(|k| k == v) {
                return Err(ExprError::UnknownVariable {
                    expr: self.source.clone(),
                    name: v,
                    known: known.into_iter().collect::<Vec<_>>().join(", "),
                });
            }
        }
        Ok(())
    }

    /// Evaluates to an integer; a float result, overflow or division by zero is an error.
    pub fn eval_int(&self, env: &Bindings) -> Result<i64, ExprError> {
        let ctx = self.context(env)?;
        self.tree
            .eval_int_with_context(&ctx)
            .map_err(|e| self.eval_error(e))
    }

    /// Evaluates to a float (integers widen); for FLOP and byte counts.
    pub fn eval_f64(&self, env: &Bindings) -> Result<f64, ExprError> {
        let ctx = self.context(env)?;
        self.tree
            .eval_number_with_context(&ctx)
            .map_err(|e| self.eval_error(e))
    }

    fn eval_error(&self, e: EvalexprError<DefaultNumericTypes>) -> ExprError {
        ExprError::Eval {
            expr: self.source.clone(),
            reason: e.to_string(),
        }
    }

    fn context(&self, env: &Bindings) -> Result<HashMapContext<DefaultNumericTypes>, ExprError> {
        self.check_variables(env.keys().map(String::as_str))?;
        let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
        let internal = |reason: String| ExprError::Eval {
            expr: self.source.clone(),
            reason,
        };
        ctx.set_builtin_functions_disabled(true)
            .map_err(|e| internal(e.to_string()))?;
        for name in self.variables() {
            if let Some(v) = env.get(&name) {
                ctx.set_value(name, Value::from_int(*v))
                    .map_err(|e| internal(e.to_string()))?;
            }
        }
        ctx.set_function("ceil_div".into(), Function::new(|a| int_pair(a, ceil_div)))
            .map_err(|e| internal(e.to_string()))?;
        ctx.set_function("round_up".into(), Function::new(|a| int_pair(a, round_up)))
            .map_err(|e| internal(e.to_string()))?;
        ctx.set_function(
            "min".into(),
            Function::new(|a| int_pair(a, |x, y| Ok(x.min(y)))),
        )
        .map_err(|e| internal(e.to_string()))?;
        ctx.set_function(
            "max".into(),
            Function::new(|a| int_pair(a, |x, y| Ok(x.max(y)))),
        )
        .map_err(|e| internal(e.to_string()))?;
        Ok(ctx)
    }
}

fn ceil_div(a: i64, b: i64) -> Result<i64, String> {
    if b <= 0 {
        return Err(format!("ceil_div({a}, {b}): divisor must be positive"));
    }
    Ok(a.div_euclid(b) + i64::from(a.rem_euclid(b) != 0))
}

fn round_up(a: i64, b: i64) -> Result<i64, String> {
    ceil_div(a, b)?
        .checked_mul(b)
        .ok_or_else(|| format!("round_up({a}, {b}) overflows"))
}

type EvalResult = Result<Value<DefaultNumericTypes>, EvalexprError<DefaultNumericTypes>>;

fn int_pair(
    arg: &Value<DefaultNumericTypes>,
    f: impl Fn(i64, i64) -> Result<i64, String>,
) -> EvalResult {
    let pair = arg.as_fixed_len_tuple(2)?;
    let a = pair[0].as_int()?;
    let b = pair[1].as_int()?;
    f(a, b)
        .map(Value::from_int)
        .map_err(EvalexprError::CustomMessage)
}

fn truncate(s: &str) -> String {
    s.chars().take(60).chain("...".chars()).collect()
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Expr({:?})", self.source)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl serde::Serialize for Expr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> serde::Deserialize<'de> for Expr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A plain integer in YAML is a valid expression too.
        let v = serde_json::Value::deserialize(d)?;
        let text = match v {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => n.to_string(),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "expected an expression (string or integer), found {other}"
                )));
            }
        };
        Expr::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(pairs: &[(&str, i64)]) -> Bindings {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn evaluates_launch_geometry() {
        let e = Expr::parse("ceil_div(M, 128) * ceil_div(N, 256)").expect("parses");
        assert_eq!(
            e.eval_int(&env(&[("M", 70), ("N", 7168)])).expect("evals"),
            28
        );
        assert_eq!(
            Expr::parse("round_up(S, 64)")
                .expect("p")
                .eval_int(&env(&[("S", 200)]))
                .expect("e"),
            256
        );
        assert_eq!(
            Expr::parse("max(1, min(M, 4))")
                .expect("p")
                .eval_int(&env(&[("M", 9)]))
                .expect("e"),
            4
        );
    }

    #[test]
    fn rejects_what_a_size_formula_must_not_do() {
        for bad in [
            "a = 3",
            "\"x\"",
            "M; N",
            "str::len(M)",
            "system(1)",
            "",
            "M > 3",
        ] {
            assert!(Expr::parse(bad).is_err(), "{bad} should be rejected");
        }
        assert!(matches!(
            Expr::parse("foo(M)"),
            Err(ExprError::UnknownFunction { name, .. }) if name == "foo"
        ));
    }

    #[test]
    fn names_unknown_variables_and_arithmetic_faults() {
        let e = Expr::parse("M * Q").expect("parses");
        let err = e.eval_int(&env(&[("M", 1)])).expect_err("Q unknown");
        assert!(err.to_string().contains("`Q`"), "{err}");
        let e = Expr::parse("ceil_div(M, 0)").expect("parses");
        assert!(e.eval_int(&env(&[("M", 1)])).is_err());
        let e = Expr::parse("M * M * M").expect("parses");
        assert!(
            e.eval_int(&env(&[("M", i64::MAX / 2)])).is_err(),
            "overflow is an error"
        );
        let e = Expr::parse("M / 2.5").expect("parses");
        assert!(
            e.eval_int(&env(&[("M", 5)])).is_err(),
            "a float is not an int"
        );
    }

    #[test]
    fn flops_as_float() {
        let e = Expr::parse("4*B*H*S*S*D").expect("parses");
        let v = e
            .eval_f64(&env(&[("B", 4), ("H", 48), ("S", 4096), ("D", 128)]))
            .expect("evals");
        assert_eq!(v, 4.0 * 4.0 * 48.0 * 4096.0 * 4096.0 * 128.0);
    }

    proptest! {
        #[test]
        fn ceil_div_matches_definition(a in -1_000_000i64..1_000_000, b in 1i64..10_000) {
            let e = Expr::parse("ceil_div(a, b)").expect("parses");
            let got = e.eval_int(&env(&[("a", a), ("b", b)])).expect("evals");
            prop_assert!(got * b >= a && (got - 1) * b < a);
        }

        #[test]
        fn never_panics_on_text(s in ".{0,80}") {
            if let Ok(e) = Expr::parse(&s) {
                let _ = e.eval_int(&env(&[("M", 3), ("N", 5)]));
            }
        }
    }
}
