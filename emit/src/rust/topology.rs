//! The topology's part of `main.rs`: the communicators (world, Cartesian or not, self, rows,
//! columns, slices, blocks of ranks), the directions with each rank's neighbours, and the
//! constants of directions and tags, as fields, set-up code and tables of the `Kit`.

use std::collections::BTreeSet;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::comments::capitalise;
use super::tokens::doc;
use crate::c::{comm_name, message_tag_name, tag_stem};
use mpiskel_program::{Comm, Layout, Skeleton};

/// What the parts of the program add to the topology's `Kit` (its fields and their values), to
/// its set-up code, and to the tables before it.
#[derive(Default)]
pub(super) struct KitParts {
    pub(super) fields: Vec<TokenStream>,
    pub(super) init: Vec<TokenStream>,
    pub(super) setup: TokenStream,
    pub(super) tables: TokenStream,
}

/// Constants the program may name (directions, tags), each kept only if it does.
pub(super) type Consts = Vec<(proc_macro2::Ident, TokenStream)>;

/// The communicators of the program as `Kit` fields (`k.world`, `k.self_comm`, …); `world`
/// and `self_comm` made.
pub(super) fn communicators(skel: &Skeleton, kit: &mut KitParts) -> Vec<TokenStream> {
    let grid_dims = skel.grid_coords.first().map_or(0, Vec::len);
    let cartesian = matches!(skel.layout, Layout::Cartesian { .. });
    let KitParts { fields: kit_fields, init: kit_init, setup, .. } = kit;
    let comms: Vec<TokenStream> = skel
        .comms
        .iter()
        .map(|c| match c {
            Comm::World => quote! { k.world },
            Comm::SelfComm => quote! { k.self_comm },
            other => {
                let id = format_ident!("{}", comm_name(other, grid_dims).0);
                quote! { k.#id }
            }
        })
        .collect();
    let world_ty = if cartesian {
        quote! { CartesianCommunicator }
    } else {
        quote! { SimpleCommunicator }
    };
    let world_doc =
        doc(if cartesian { "The Cartesian communicator of the topology." } else { "All ranks." });
    kit_fields.push(quote! { #world_doc world: #world_ty, });
    match &skel.layout {
        Layout::Cartesian { dims, periods } => {
            let dims = dims.iter().map(|d| Literal::usize_unsuffixed(*d));
            let periods = periods.iter();
            setup.extend(quote! {
                let world = all
                    .create_cartesian_communicator(&[#(#dims),*], &[#(#periods),*], false)
                    .expect("the skeleton runs on exactly as many ranks as its grid has cells");
            });
        }
        _ => setup.extend(quote! { let world = SimpleCommunicator::world(); }),
    }
    kit_init.push(quote! { world, });
    if skel.comms.contains(&Comm::SelfComm) {
        kit_fields.push(quote! { #[doc = " This rank alone."] self_comm: SimpleCommunicator, });
        kit_init.push(quote! { self_comm: SimpleCommunicator::self_comm(), });
    }
    comms
}

/// The directions and their neighbours (a `nbr` field of `Kit`), and the constants of
/// directions and tags.
pub(super) fn directions(skel: &Skeleton, kit: &mut KitParts) -> Consts {
    let n_lit = Literal::u32_unsuffixed(skel.n_ranks);
    let KitParts { fields: kit_fields, init: kit_init, setup, tables } = kit;
    let nd = skel.directions.len();
    // Constants of directions and tags, each kept only if the program names it.
    let mut dir_consts: Vec<(proc_macro2::Ident, TokenStream)> = Vec::new();
    if nd > 0 {
        for (i, d) in skel.directions.iter().enumerate() {
            let id = format_ident!("{}", d.ident);
            let i = Literal::usize_unsuffixed(i);
            let comment = if d.name != d.ident {
                format!("{} (offset {:?})", d.name, d.offset)
            } else if d.offset.is_empty() {
                String::new()
            } else {
                format!("offset {:?}", d.offset)
            };
            let dd = if comment.is_empty() {
                quote! {}
            } else {
                doc(&comment)
            };
            dir_consts.push((id.clone(), quote! { #dd const #id: usize = #i; }));
        }
        let ndl = Literal::usize_unsuffixed(nd);
        dir_consts
            .push((format_ident!("N_DIRECTIONS"), quote! { const N_DIRECTIONS: usize = #ndl; }));
        let mut seen = BTreeSet::new();
        // (Where every message carries its traced tag's, the directions' are not used.)
        for d in skel.directions.iter().filter(|_| !skel.all_tags) {
            if seen.insert(d.tag) {
                let id = format_ident!("TAG_{}", tag_stem(&d.ident));
                let v = Literal::i32_unsuffixed(d.tag);
                dir_consts.push((id.clone(), quote! { const #id: Tag = #v; }));
            }
        }
        for (traced, t) in &skel.message_tags {
            let id = format_ident!("{}", message_tag_name(*traced));
            let v = Literal::i32_unsuffixed(*t);
            let d = doc(&if *traced == mpiskel_logicalize::SINGLE_MESSAGE_TAG {
                "Messages whose traced tags number them one by one.".to_owned()
            } else if skel.all_tags {
                format!("Messages traced with tag {traced}.")
            } else {
                format!("Messages that receives from any source take, traced with tag {traced}.")
            });
            dir_consts.push((id.clone(), quote! { #d const #id: Tag = #v; }));
        }
        kit_fields.push(quote! {
            #[doc = " Rank in each direction; `None` where there is none."]
            nbr: [Option<Rank>; N_DIRECTIONS],
        });
        kit_init.push(quote! { nbr, });
        match &skel.layout {
            Layout::Cartesian { dims, .. } => {
                let nd_grid = dims.len();
                setup.extend(quote! { let mut nbr = [None; N_DIRECTIONS]; });
                let mut done = vec![false; nd];
                for (i, d) in skel.directions.iter().enumerate() {
                    if done[i] {
                        continue;
                    }
                    done[i] = true;
                    let id = format_ident!("{}", d.ident);
                    let nonzero: Vec<(usize, i64)> =
                        d.offset.iter().copied().enumerate().filter(|(_, o)| *o != 0).collect();
                    if nonzero.is_empty() {
                        setup.extend(quote! { nbr[#id] = Some(world.rank()); });
                        continue;
                    }
                    if let [(kd, o)] = nonzero[..] {
                        if o.abs() == 1 {
                            let back = skel.directions.iter().position(|e| {
                                !e.offset.is_empty()
                                    && e.offset.iter().enumerate().all(|(j, &x)| {
                                        if j == kd {
                                            x == -o
                                        } else {
                                            x == 0
                                        }
                                    })
                            });
                            if let Some(bk) = back {
                                done[bk] = true;
                            }
                            let slot = |x: Option<usize>| match x {
                                Some(j) => {
                                    let id = format_ident!("{}", skel.directions[j].ident);
                                    quote! { nbr[#id] }
                                }
                                None => quote! { _ },
                            };
                            let (minus, plus) = if o > 0 {
                                (slot(back), slot(Some(i)))
                            } else {
                                (slot(Some(i)), slot(back))
                            };
                            let kd = Literal::usize_unsuffixed(kd);
                            setup.extend(quote! { (#minus, #plus) = world.shift(#kd, 1); });
                            continue;
                        }
                    }
                    let off = (0..nd_grid)
                        .map(|k| Literal::i64_unsuffixed(d.offset.get(k).copied().unwrap_or(0)));
                    setup.extend(quote! { nbr[#id] = rt::cart_neighbour(&world, &[#(#off),*]); });
                }
            }
            Layout::Table { neighbours } => {
                let rows = neighbours.iter().map(|row| {
                    let v = row.iter().map(|x| Literal::i64_unsuffixed(*x));
                    quote! { [#(#v),*] }
                });
                tables.extend(quote! {
                    #[doc = " Neighbour of each rank in each direction (-1: none)."]
                    const NEIGHBOURS: [[i32; N_DIRECTIONS]; #n_lit] = [#(#rows),*];
                });
                setup.extend(quote! {
                    let nbr = NEIGHBOURS[rank].map(|r| (r >= 0).then_some(r));
                });
            }
            Layout::None => setup.extend(quote! { let nbr = [None; N_DIRECTIONS]; }),
        }
    }
    dir_consts
}

/// The sub-communicators (rows, columns, slices, blocks of ranks) as `Kit` fields.
pub(super) fn sub_communicators(skel: &Skeleton, kit: &mut KitParts) {
    let grid_dims = skel.grid_coords.first().map_or(0, Vec::len);
    let cartesian = matches!(skel.layout, Layout::Cartesian { .. });
    let n_lit = Literal::u32_unsuffixed(skel.n_ranks);
    let KitParts { fields: kit_fields, init: kit_init, setup, tables } = kit;
    for c in &skel.comms {
        let (name, comment) = comm_name(c, grid_dims);
        let id = format_ident!("{}", name);
        let d = doc(&format!("{}.", capitalise(&comment)));
        match c {
            Comm::World | Comm::SelfComm => continue,
            Comm::Slice { free } if cartesian => {
                let keep = (0..grid_dims).map(|k| free.contains(&k));
                setup.extend(quote! { let #id = world.subgroup(&[#(#keep),*]); });
                kit_fields.push(quote! { #d #id: CartesianCommunicator, });
            }
            Comm::Slice { free } => {
                let colors = skel.grid_coords.iter().map(|c| {
                    (0..c.len()).filter(|k| !free.contains(k)).fold(0, |a, k| a * 1000 + c[k])
                });
                let td = doc(&format!("Which {name} each rank belongs to."));
                split_by_table(&name, td, colors.map(|c| c as u32), n_lit.clone(), tables, setup);
                kit_fields.push(quote! { #d #id: SimpleCommunicator, });
            }
            Comm::Strided { size, stride: 1 } => {
                let s = Literal::usize_unsuffixed(*size);
                setup.extend(quote! {
                    let #id = all
                        .split_by_color_with_key(Color::with_value(all.rank() / #s), all.rank())
                        .expect("every rank has a colour");
                });
                kit_fields.push(quote! { #d #id: SimpleCommunicator, });
            }
            Comm::Strided { size, stride } => {
                let (block, st) =
                    (Literal::usize_unsuffixed(size * stride), Literal::usize_unsuffixed(*stride));
                setup.extend(quote! {
                    let #id = all
                        .split_by_color_with_key(Color::with_value(all.rank() / #block * #st + all.rank() % #st), all.rank())
                        .expect("every rank has a colour");
                });
                kit_fields.push(quote! { #d #id: SimpleCommunicator, });
            }
            Comm::Groups { colours, .. } => {
                let td = doc(&format!(
                    "Which of {name}'s groups each rank belongs to (a rank in none of them has one \
                     of its own)."
                ));
                split_by_table(&name, td, colours.iter().copied(), n_lit.clone(), tables, setup);
                kit_fields.push(quote! { #d #id: SimpleCommunicator, });
            }
        }
        kit_init.push(quote! { #id, });
    }
}

/// A communicator `name` made by splitting the world by a table of each rank's colour: the
/// table (documented by `table_doc`) and the split.
fn split_by_table(
    name: &str,
    table_doc: TokenStream,
    colours: impl Iterator<Item = u32>,
    n_lit: Literal,
    tables: &mut TokenStream,
    setup: &mut TokenStream,
) {
    let id = format_ident!("{}", name);
    let table = format_ident!("{}_COLOR", name.to_uppercase());
    let colours = colours.map(Literal::u32_unsuffixed);
    tables.extend(quote! { #table_doc const #table: [i32; #n_lit] = [#(#colours),*]; });
    setup.extend(quote! {
        let #id = all
            .split_by_color_with_key(Color::with_value(#table[rank]), all.rank())
            .expect("every rank has a colour");
    });
}
