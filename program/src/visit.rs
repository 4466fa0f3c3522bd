//! Walks over the statements of a body, the nested ones included (a loop's and a guard's body,
//! each kind of time step's), in program order: each statement before the ones it holds. The
//! cuts, the back ends and the simulator ask the same questions of the IR (is there a block
//! that …, how many calls that …, mark every block that …); these walks are the one way down.
//!
//! # Complexity
//! O(statements) per walk; `any` stops at the first statement that answers.

use crate::ir::Stmt;

impl Stmt {
    /// The bodies this statement holds: a loop's or a guard's, each time step kind's.
    pub fn bodies(&self) -> impl Iterator<Item = &[Stmt]> {
        let one = match self {
            Stmt::Loop { body, .. } | Stmt::Guard { body, .. } => Some(body.as_slice()),
            _ => None,
        };
        let cases = match self {
            Stmt::Steps { cases } => cases.as_slice(),
            _ => &[],
        };
        one.into_iter().chain(cases.iter().map(|c| c.body.as_slice()))
    }
}

/// Calls `f` on every statement of `body`, nested ones included, in program order.
pub fn each<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in body {
        f(s);
        for b in s.bodies() {
            each(b, f);
        }
    }
}

/// [`each`], to change: `f` sees a statement before the ones it holds.
pub fn each_mut(body: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
    for s in body {
        f(s);
        match s {
            Stmt::Loop { body, .. } | Stmt::Guard { body, .. } => each_mut(body, f),
            Stmt::Steps { cases } => cases.iter_mut().for_each(|c| each_mut(&mut c.body, f)),
            Stmt::Compute { .. } | Stmt::Call { .. } => {}
        }
    }
}

/// Whether `f` holds for any statement of `body`, nested ones included.
pub fn any(body: &[Stmt], f: &mut dyn FnMut(&Stmt) -> bool) -> bool {
    body.iter().any(|s| f(s) || s.bodies().any(|b| any(b, f)))
}

/// How many statements of `body`, nested ones included, `f` holds for.
pub fn count(body: &[Stmt], f: &mut dyn FnMut(&Stmt) -> bool) -> usize {
    let mut n = 0;
    each(body, &mut |s| n += usize::from(f(s)));
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiskel_compress::When;

    fn block(seconds: f64) -> Stmt {
        serde_json::from_value(serde_json::json!({"stmt": "compute", "seconds": seconds}))
            .expect("a compute block")
    }

    #[test]
    fn every_statement_is_seen_once_each_before_those_it_holds() {
        let inner = Stmt::Guard { when: When::First, depth: 1, count: 2, body: vec![block(3.0)] };
        let body = vec![
            block(1.0),
            Stmt::Loop { depth: 0, count: 4, body: vec![block(2.0), inner], note: String::new() },
        ];
        let mut seen = Vec::new();
        each(&body, &mut |s| {
            seen.push(match s {
                Stmt::Compute { seconds, .. } => format!("{seconds}"),
                Stmt::Loop { .. } => "loop".into(),
                Stmt::Guard { .. } => "guard".into(),
                _ => "other".into(),
            })
        });
        assert_eq!(seen, ["1", "loop", "2", "guard", "3"]);
        assert_eq!(count(&body, &mut |s| matches!(s, Stmt::Compute { .. })), 3);
        assert!(any(&body, &mut |s| matches!(s, Stmt::Compute { seconds, .. } if *seconds == 3.0)));
        let mut body = body;
        each_mut(&mut body, &mut |s| {
            if let Stmt::Compute { seconds, .. } = s {
                *seconds *= 10.0;
            }
        });
        assert_eq!(
            count(&body, &mut |s| matches!(s, Stmt::Compute { seconds, .. } if *seconds >= 10.0)),
            3
        );
    }
}
