//! Comments inside function bodies, which tokens cannot carry: each travels as a `__note!(N);`
//! statement and becomes a `// …` line once the file is printed; and the printed file laid out
//! (blank lines between items).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::c::RenderError;

thread_local! {
    /// Texts of the comments of the file being generated, by number.
    pub(super) static NOTES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A `// text` comment at this point of a function body: `__note!(N);` until printed.
pub(super) fn note(text: &str) -> TokenStream {
    let n = NOTES.with(|v| {
        let mut v = v.borrow_mut();
        v.push(text.to_owned());
        v.len() - 1
    });
    let n = Literal::usize_unsuffixed(n);
    quote! { __note!(#n); }
}

/// Lays out a generated Rust file. Tokens that do not parse are a bug of this back end:
/// reported, never written.
pub(super) fn format_file(
    name: &str,
    tokens: proc_macro2::TokenStream,
) -> Result<String, RenderError> {
    let parsed = syn::parse2::<syn::File>(tokens)
        .map_err(|e| RenderError::Unparsable { file: name.into(), error: e.to_string() })?;
    Ok(notes_to_comments(&layout(&prettyplease::unparse(&parsed))))
}

/// Spacing prettyplease leaves to the caller: a blank line between top-level items (consecutive
/// `const`s without documentation stay together), after the module header and the imports; and
/// arrays of plain numbers packed several to a line.
pub(super) fn layout(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let is_number = |l: &str| {
        let t = l.trim().trim_end_matches(',');
        !t.is_empty()
            && t.chars().all(|c| c.is_ascii_digit() || "-+.e_".contains(c))
            && l.trim().ends_with(',')
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        // A run of numbers, one per line: pack them.
        if is_number(line) {
            let pad = &line[..line.len() - line.trim_start().len()];
            let mut j = i;
            let mut row = String::new();
            while j < lines.len() && is_number(lines[j]) {
                let t = lines[j].trim();
                if !row.is_empty() && pad.len() + row.len() + 1 + t.len() > 96 {
                    out.push(format!("{pad}{row}"));
                    row.clear();
                }
                if !row.is_empty() {
                    row.push(' ');
                }
                row.push_str(t);
                j += 1;
            }
            out.push(format!("{pad}{row}"));
            i = j;
            continue;
        }
        let top = !line.starts_with(' ') && !line.is_empty();
        if top && !out.is_empty() {
            let prev = out.last().map(String::as_str).unwrap_or("");
            let starts_item = line.starts_with("///")
                || line.starts_with("fn ")
                || line.starts_with("struct ")
                || line.starts_with("impl ")
                || line.starts_with("static ")
                || line.starts_with("mod ")
                || (line.starts_with("use ") && !prev.starts_with("use "))
                || (line.starts_with("const ")
                    && !prev.starts_with("const ")
                    && !prev.starts_with("///"));
            let after_header = prev.starts_with("//!") && !line.starts_with("//!");
            let in_doc = prev.starts_with("///");
            if (starts_item || after_header) && !in_doc && !prev.is_empty() {
                out.push(String::new());
            }
        }
        out.push(line.to_owned());
        i += 1;
    }
    out.join("\n") + "\n"
}

/// Every identifier that occurs in `ts`: one walk answers any number of [`uses_ident`]
/// questions about a large stream.
pub(super) fn idents_of(ts: &TokenStream) -> std::collections::HashSet<String> {
    fn walk(ts: TokenStream, out: &mut std::collections::HashSet<String>) {
        for t in ts {
            match t {
                proc_macro2::TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = std::collections::HashSet::new();
    walk(ts.clone(), &mut out);
    out
}

/// Whether the identifier `name` occurs in `ts`.
pub(super) fn uses_ident(ts: &TokenStream, name: &str) -> bool {
    ts.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => uses_ident(&g.stream(), name),
        _ => false,
    })
}

pub(super) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Turns the `__note!(N);` statements into `// …` comments.
pub(super) fn notes_to_comments(text: &str) -> String {
    let notes = NOTES.with(|v| std::mem::take(&mut *v.borrow_mut()));
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let t = line.trim_start();
        let id = t.strip_prefix("__note!(").and_then(|r| r.strip_suffix(");"));
        if let Some(text) = id.and_then(|n| n.parse::<usize>().ok()).and_then(|n| notes.get(n)) {
            let pad = &line[..line.len() - t.len()];
            out.push_str(pad);
            out.push_str("// ");
            out.push_str(text);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_code_that_does_not_parse_is_an_error() {
        let bad: proc_macro2::TokenStream = "fn main() { let = 1; }".parse().unwrap();
        let e = format_file("src/main.rs", bad).unwrap_err();
        assert!(matches!(e, RenderError::Unparsable { .. }));
        assert!(e.to_string().starts_with("src/main.rs: the generated code does not parse"), "{e}");
        let good: proc_macro2::TokenStream = "fn main() { let x = 1; }".parse().unwrap();
        assert!(format_file("src/main.rs", good).unwrap().contains("let x = 1;"));
    }
}
