//! Plan and task expressions (`ptxbench::expr`): any text parses or is refused, and a parsed
//! expression evaluates, as an integer and as a float, to a value or an error for any axis
//! values, extreme ones included.

use proptest::prelude::*;

use ptxbench::expr::{Bindings, Expr, ExprError, MAX_LEN};

use crate::{bounded, config};

const NAMES: &[&str] = &["M", "N", "K", "B", "H", "S", "D", "unknown_axis", "_", "M2"];
const FUNCS: &[&str] = &[
    "ceil_div", "round_up", "min", "max", "foo", "str::len", "if",
];
const OPS: &[&str] = &["+", "-", "*", "/", "%", "^", "==", "&&", ",", " "];

fn literal() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        prop::sample::select(
            &[
                "0",
                "1",
                "-1",
                "9223372036854775807",
                "9223372036854775808",
                "-9223372036854775808",
                "18446744073709551616",
                "99999999999999999999999999",
                "1e308",
                "1e309",
                "-0.0",
                "0.5",
                "NaN",
                "inf",
                "0x10",
                "1_000",
                "()",
                "(1, 2)",
                "true",
            ][..]
        )
        .prop_map(str::to_string),
        prop::sample::select(NAMES).prop_map(str::to_string),
    ]
}

/// Expressions built like a size formula, with operators, functions and nesting a formula
/// should not have.
fn formula() -> impl Strategy<Value = String> {
    literal().prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(OPS), inner.clone())
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            inner.clone().prop_map(|a| format!("({a})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            (
                prop::sample::select(FUNCS),
                prop::collection::vec(inner, 0..4)
            )
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
        ]
    })
}

fn bindings() -> impl Strategy<Value = Bindings> {
    let value = prop_oneof![
        any::<i64>(),
        Just(i64::MAX),
        Just(i64::MIN),
        Just(0i64),
        Just(-1i64),
        1i64..100_000,
    ];
    prop::collection::vec(value, NAMES.len()).prop_map(|vals| {
        NAMES
            .iter()
            .take(8)
            .zip(vals)
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    })
}

/// Parses `text` and, if it parses, evaluates it under `env` both ways; checks what comes
/// back. Runs within the case limit.
fn exercise(text: String, env: Bindings) {
    bounded("expression", move || match Expr::parse(&text) {
        Ok(e) => {
            assert!(text.trim().len() <= MAX_LEN);
            assert_eq!(e.source(), text.trim());
            // Parsing its own text again gives the same expression.
            assert_eq!(Expr::parse(e.source()).as_ref(), Ok(&e));
            let _ = e.variables();
            for r in [e.eval_int(&env).map(|_| ()), e.eval_f64(&env).map(|_| ())] {
                if let Err(err) = r {
                    assert!(
                        err.to_string().contains(e.source()) || e.source().len() > 60,
                        "an evaluation error names the expression: {err}"
                    );
                }
            }
        }
        Err(ExprError::TooLong { .. }) => assert!(text.trim().len() > MAX_LEN),
        Err(err) => {
            let msg = err.to_string();
            assert!(!msg.is_empty());
            assert!(
                msg.len() <= 2 * MAX_LEN + 1024,
                "a parse error stays short: {} bytes",
                msg.len()
            );
        }
    });
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn generated_formulas_evaluate_or_fail_cleanly(f in formula(), env in bindings()) {
        exercise(f, env);
    }

    #[test]
    fn arbitrary_text_parses_or_fails_cleanly(s in ".{0,600}", env in bindings()) {
        exercise(s, env);
    }

    #[test]
    fn deep_nesting_parses_or_fails_cleanly(
        depth in 1usize..400,
        inner in prop::sample::select(&["M", "-M", "ceil_div(M, N)", "", "min(M", "1)"][..]),
        env in bindings(),
    ) {
        exercise(format!("{}{inner}{}", "(".repeat(depth), ")".repeat(depth)), env.clone());
        exercise("-".repeat(depth * 2) + inner, env.clone());
        exercise(
            format!("{}M{}", "max(1, ".repeat(depth / 8), ")".repeat(depth / 8)),
            env,
        );
    }
}
