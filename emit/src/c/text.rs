//! The words and numbers of the emitted C that its comments and tables share: seconds as C
//! literals, rank and iteration lists as short text, a phase's comment, communicator names.

use mpiskel_program::Comm;

/// Seconds as a C literal with six significant digits.
pub(crate) fn seconds(s: f64) -> String {
    format!("{s:.5e}")
}

/// Ranks as short text: `0-3, 8, 12-15`.
pub(crate) fn ranks_text(ranks: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(if j > i { format!("{}-{}", ranks[i], ranks[j]) } else { ranks[i].to_string() });
        i = j + 1;
    }
    parts.join(", ")
}

/// Iteration numbers as short text, the first and last few of a long list: `7, 22, 37, 52` or
/// `2, 7, 12, …, 992, 997 (200 in all)`.
pub(crate) fn iterations_text(its: &[u64]) -> String {
    let show = |xs: &[u64]| xs.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    if its.len() <= 8 {
        show(its)
    } else {
        format!("{}, …, {} ({} in all)", show(&its[..3]), show(&its[its.len() - 2..]), its.len())
    }
}

/// Numbers `values` eight to a line, for C array initialisers.
pub(super) fn table_lines<T: ToString>(values: &[T], per_line: usize) -> Vec<String> {
    values
        .chunks(per_line)
        .map(|c| c.iter().map(T::to_string).collect::<Vec<_>>().join(", ") + ",")
        .collect()
}

/// What a phase's comment says: where it came from, its iterations, calls and computation.
pub(crate) fn phase_comment(p: &mpiskel_program::Phase) -> String {
    let text = phase_text(p);
    if p.scale == 1.0 {
        return text;
    }
    format!(
        "{text} Part of a stretch between two collectives of all ranks that folds into no loop, \
         cut short: its time, times {:.4}, stands for its calls and the stretch's calls that \
         the skeleton does not run.",
        p.scale
    )
}

fn phase_text(p: &mpiskel_program::Phase) -> String {
    if p.is_loop {
        let warmup = if p.warmup > 0 {
            format!(
                "; the warm-up iteration this skeleton skips counts as {} more of its iterations, \
                 at the slowest rank's mean",
                p.warmup
            )
        } else {
            String::new()
        };
        format!(
            "{}: {}; runs {} of {} iterations ({} calls and {} s of computation each){warmup}.",
            p.name,
            p.origin,
            p.run,
            p.full,
            p.calls,
            seconds(p.compute_s)
        )
    } else if p.skipped.is_some() {
        format!(
            "{}: {}; skipped: the main loop's prediction counts it as one more of its \
             iterations, and only the {} s of computation it had beyond one runs here.",
            p.name,
            p.origin,
            seconds(p.compute_s)
        )
    } else {
        format!(
            "{}: {} ({} calls, {} s of computation).",
            p.name,
            p.origin,
            p.calls,
            seconds(p.compute_s)
        )
    }
}

/// The name of the tag that messages traced with tag `traced` carry: `TAG_MSG<traced>`, and
/// `TAG_NUMBERED` for the messages whose tags number them one by one, which all carry one tag
/// (`mpiskel_logicalize::SINGLE_MESSAGE_TAG`).
pub(crate) fn message_tag_name(traced: i32) -> String {
    if traced == mpiskel_logicalize::SINGLE_MESSAGE_TAG {
        "TAG_NUMBERED".into()
    } else {
        format!("TAG_MSG{traced}")
    }
}

pub(crate) fn tag_stem(ident: &str) -> String {
    if ident.starts_with("CHILD") {
        "CHILD".into()
    } else {
        ident.to_owned()
    }
}

pub(crate) fn comm_name(c: &Comm, grid_dims: usize) -> (String, String) {
    match c {
        Comm::World => ("world".into(), "all ranks".into()),
        Comm::SelfComm => ("MPI_COMM_SELF".into(), String::new()),
        Comm::Slice { free } if grid_dims == 2 && free == &[1] => {
            ("row_comm".into(), "this rank's row of the grid".into())
        }
        Comm::Slice { free } if grid_dims == 2 && free == &[0] => {
            ("column_comm".into(), "this rank's column of the grid".into())
        }
        Comm::Slice { free } => (
            format!(
                "slice_{}_comm",
                free.iter().map(usize::to_string).collect::<Vec<_>>().join("")
            ),
            format!("the ranks that differ from this one only along dimensions {free:?}"),
        ),
        Comm::Strided { size, stride: 1 } => {
            (format!("block{size}_comm"), format!("consecutive blocks of {size} ranks"))
        }
        Comm::Strided { size, stride } => (
            format!("group{size}_stride{stride}_comm"),
            format!("groups of {size} ranks spaced {stride} apart"),
        ),
        Comm::Groups { size, stride, part, .. } => {
            let split = if *part > 0 { format!("_split{part}") } else { String::new() };
            let which = if *part > 0 { format!(" (split {part})") } else { String::new() };
            if *stride == 1 {
                (
                    format!("traced{size}{split}_comm"),
                    format!("the traced groups of {size} ranks{which}"),
                )
            } else {
                (
                    format!("traced{size}_stride{stride}{split}_comm"),
                    format!("the traced groups of {size} ranks spaced {stride} apart{which}"),
                )
            }
        }
    }
}
