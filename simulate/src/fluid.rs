//! Max-min fair sharing of resources among concurrent activities (flows on links, computations
//! on processors), re-solved on the connected component an activity joins or leaves.
//!
//! Each variable (an activity's rate) uses some resources with a coefficient, has a sharing
//! penalty (its share on a resource is inversely proportional to it) and an upper bound.
//! Progressive filling (Bertsekas & Gallager 1992, §6.5.2; SimGrid's `lmm` solver, Casanova et
//! al. 2014): the resource whose remaining capacity over its unfixed load, Σ coeff / penalty, is
//! least saturates first, fixing its variables at that level over their penalty, unless a
//! variable's bound is reached before. A fat-pipe resource bounds each of its variables alone.
//! A variable with penalty 0 takes no share (a flow still paying its latency).
//!
//! Cost: O(k · (n + m)) per solve for a component of n variables over m resources with k
//! saturation steps (k ≤ n + m); only the component touched by a change is solved again.

/// A resource: a link direction or a host's processors.
#[derive(Debug, Clone)]
struct Resource {
    capacity: f64,
    fatpipe: bool,
    /// Σ coefficient × value of the variables sharing it.
    used: f64,
    /// Variables that came or went since it was last solved whole (crowded resources).
    changes: u32,
    /// Until which solve its component is taken as too large to explore (it was, lately).
    large_until: u64,
    /// Variables that currently share it (penalty > 0).
    vars: Vec<usize>,
}

/// Most resources a variable uses (a route of three links each way, and one more).
pub const MAX_USES: usize = 8;

/// Up to [`MAX_USES`] items kept in place: a variable's uses are read at every solve that
/// touches it, and in place they share its cache lines (at 16,384 ranks the solves wait on
/// memory more than they compute).
#[derive(Debug, Clone, Copy)]
struct Inline<T: Copy + Default> {
    len: u8,
    items: [T; MAX_USES],
}

impl<T: Copy + Default> Inline<T> {
    /// `from`, less what does not fit.
    fn of(from: &[T]) -> Inline<T> {
        let mut items = [T::default(); MAX_USES];
        let n = from.len().min(MAX_USES);
        items[..n].copy_from_slice(&from[..n]);
        Inline { len: n as u8, items }
    }
}

impl<T: Copy + Default> std::ops::Deref for Inline<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items[..usize::from(self.len)]
    }
}

impl<T: Copy + Default> std::ops::DerefMut for Inline<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[..usize::from(self.len)]
    }
}

/// One activity's rate variable.
#[derive(Debug, Clone)]
struct Var {
    /// The resources it uses (at most [`MAX_USES`]) with its coefficient on each.
    uses: Inline<(usize, f64)>,
    /// Per use: the variable's position in that resource's list (while it shares), so that
    /// leaving a resource shared by thousands costs O(1).
    slots: Inline<u32>,
    penalty: f64,
    bound: f64,
    value: f64,
}

/// The sharing system.
#[derive(Debug, Default)]
pub struct System {
    resources: Vec<Resource>,
    vars: Vec<Var>,
    free: Vec<usize>,
    // Scratch, kept between solves so that a solve allocates nothing once warm.
    mark_res: Vec<u32>,
    mark_var: Vec<u32>,
    /// Per resource: its index in the component being solved.
    local: Vec<u32>,
    epoch: u32,
    comp_res: Vec<usize>,
    comp_vars: Vec<usize>,
    remaining: Vec<f64>,
    load: Vec<f64>,
    limit: Vec<f64>,
    order: Vec<u32>,
    fixed: Vec<bool>,
    /// The component resources that saturate at the current level.
    saturated: Vec<usize>,
    /// Crowded resources solved in part in this solve.
    partial: Vec<usize>,
    /// Solves so far.
    solves: u64,
    /// Per variable: its index in the component being solved.
    var_local: Vec<u32>,
    /// Per component resource: how many of its variables are not fixed yet.
    count: Vec<u32>,
}

/// A change re-solves its whole component (exact max-min) where the component holds at most
/// about this many variables (an all-to-all among 16 ranks has 240 flows). A larger one is
/// re-solved only around the change: the variables on the changed resources get a fair share of
/// what the others leave, the others keep their rates. A change's effect on flows two links
/// away is then left out; it is small where flows are short next to their latency (halo
/// exchanges at scale), and exact max-min over thousands of flows per message would cost
/// O(flows) per event.
pub const EXACT_LIMIT: usize = 300;

/// Solves during which a resource found in a component over [`EXACT_LIMIT`] is taken to be in
/// one still, without exploring it again (at least; sixteen per resource of a larger platform:
/// a 3-D halo exchange at 16,384 ranks keeps one component of every link for most of a step).
pub const LARGE_MEMORY: u64 = 1024;

/// Beyond [`EXACT_LIMIT`], a resource shared by more variables than this is re-balanced as a
/// whole only after a sixteenth of them have changed ([`System::solve_around`]).
pub const CROWDED: usize = 256;

/// A rate that changed: the variable, its value before and after.
pub type Change = (usize, f64, f64);

impl System {
    /// Adds a resource of `capacity` units per second.
    pub fn add_resource(&mut self, capacity: f64, fatpipe: bool) -> usize {
        self.resources.push(Resource {
            capacity,
            fatpipe,
            used: 0.0,
            changes: 0,
            large_until: 0,
            vars: Vec::new(),
        });
        self.mark_res.push(0);
        self.local.push(0);
        self.resources.len() - 1
    }

    /// Adds a variable; it shares its resources once its penalty is positive. Returns its id.
    pub fn add_var(&mut self, uses: &[(usize, f64)], penalty: f64, bound: f64) -> usize {
        let id = match self.free.pop() {
            Some(i) => {
                let v = &mut self.vars[i];
                v.uses = Inline::of(uses);
                v.slots = Inline::of(&[0; MAX_USES][..v.uses.len()]);
                v.penalty = 0.0;
                v.bound = bound;
                v.value = 0.0;
                i
            }
            None => {
                let uses = Inline::of(uses);
                self.vars.push(Var {
                    slots: Inline::of(&[0; MAX_USES][..uses.len()]),
                    uses,
                    penalty: 0.0,
                    bound,
                    value: 0.0,
                });
                self.mark_var.push(0);
                self.var_local.push(0);
                self.vars.len() - 1
            }
        };
        if penalty > 0.0 {
            self.set_penalty(id, penalty);
        }
        id
    }

    /// Sets a variable's penalty (0 withdraws it from sharing).
    pub fn set_penalty(&mut self, id: usize, penalty: f64) {
        let was = self.vars[id].penalty > 0.0;
        self.vars[id].penalty = penalty;
        let now = penalty > 0.0;
        if was != now {
            for k in 0..self.vars[id].uses.len() {
                let r = self.vars[id].uses[k].0;
                if now {
                    self.vars[id].slots[k] = self.resources[r].vars.len() as u32;
                    self.resources[r].vars.push(id);
                } else {
                    let p = self.vars[id].slots[k] as usize;
                    let list = &mut self.resources[r].vars;
                    list.swap_remove(p);
                    if let Some(&moved) = list.get(p) {
                        let m = &mut self.vars[moved];
                        if let Some(j) = m.uses.iter().position(|u| u.0 == r) {
                            m.slots[j] = p as u32;
                        }
                    }
                }
            }
        }
        if !now {
            let value = self.vars[id].value;
            if value > 0.0 && value.is_finite() {
                for k in 0..self.vars[id].uses.len() {
                    let (r, c) = self.vars[id].uses[k];
                    self.resources[r].used -= c * value;
                }
            }
            self.vars[id].value = 0.0;
        }
    }

    /// Removes a variable; its id may be reused.
    pub fn remove_var(&mut self, id: usize) {
        self.set_penalty(id, 0.0);
        self.free.push(id);
    }

    /// The resources a variable uses, copied into `out` (at most its length); returns how many.
    pub fn resources_of(&self, id: usize, out: &mut [usize]) -> usize {
        let mut n = 0;
        for (slot, &(r, _)) in out.iter_mut().zip(self.vars[id].uses.iter()) {
            *slot = r;
            n += 1;
        }
        n
    }

    /// A variable's current value.
    pub fn value(&self, id: usize) -> f64 {
        self.vars[id].value
    }

    /// Solves the component reachable from `seeds` (resources) again; `out` receives every
    /// variable of it with its value before and after.
    pub fn solve_from(&mut self, seeds: &[usize], out: &mut Vec<Change>) {
        self.solve_around(seeds, &[], out);
    }

    /// [`System::solve_from`], told which variables changed (`hints`: the ones just added or
    /// activated). Where the component is too large to solve whole and a seed resource is
    /// crowded (more than [`CROWDED`] variables: a linear reduction's root at scale), only the
    /// hinted variables on it are solved, at no less than a fair share of it, until a sixteenth
    /// of its variables have come or gone; then all of them are, together.
    pub fn solve_around(&mut self, seeds: &[usize], hints: &[usize], out: &mut Vec<Change>) {
        out.clear();
        self.gather(seeds, hints);
        let e = self.epoch;
        let n = self.comp_vars.len();
        if n == 0 {
            return;
        }
        for (i, &r) in self.comp_res.iter().enumerate() {
            self.local[r] = i as u32;
        }
        let nr = self.comp_res.len();
        self.prepare_levels(nr);
        self.order.clear();
        self.order.extend(0..n as u32);
        let limit = &self.limit;
        self.order.sort_unstable_by(|&a, &b| limit[a as usize].total_cmp(&limit[b as usize]));
        self.fixed.clear();
        self.fixed.resize(n, false);
        let mut values = std::mem::take(out);
        values.extend(self.comp_vars.iter().map(|&v| (v, self.vars[v].value, 0.0)));
        let mut unfixed = n;
        let mut next_bound = 0;
        let mut saturated = std::mem::take(&mut self.saturated);
        while unfixed > 0 {
            let mut level = f64::INFINITY;
            for r in 0..nr {
                if self.count[r] > 0 {
                    level = level.min(self.remaining[r].max(0.0) / self.load[r]);
                }
            }
            while next_bound < n && self.fixed[self.order[next_bound] as usize] {
                next_bound += 1;
            }
            if next_bound < n {
                level = level.min(self.limit[self.order[next_bound] as usize]);
            }
            if !level.is_finite() {
                // Nothing limits these variables: unbounded rates.
                for (v, fixed) in values.iter_mut().zip(self.fixed.iter_mut()) {
                    if !*fixed {
                        v.2 = f64::INFINITY;
                        *fixed = true;
                    }
                }
                break;
            }
            let tol = level * 1e-12;
            // Variables whose own limit is reached first.
            let mut fixed_now = 0;
            while next_bound < n {
                let j = self.order[next_bound] as usize;
                if self.fixed[j] {
                    next_bound += 1;
                    continue;
                }
                if self.limit[j] > level + tol {
                    break;
                }
                self.fix(j, self.limit[j] / self.vars[self.comp_vars[j]].penalty, &mut values);
                fixed_now += 1;
                next_bound += 1;
            }
            // Then every variable on a resource that saturates at this level.
            saturated.clear();
            saturated.extend((0..nr).filter(|&r| {
                self.count[r] > 0 && self.remaining[r].max(0.0) / self.load[r] <= level + tol
            }));
            for &r in &saturated {
                let gr = self.comp_res[r];
                for k in 0..self.resources[gr].vars.len() {
                    let v = self.resources[gr].vars[k];
                    if self.mark_var[v] != e {
                        continue;
                    }
                    let j = self.var_local[v] as usize;
                    if !self.fixed[j] {
                        self.fix(j, level / self.vars[v].penalty, &mut values);
                        fixed_now += 1;
                    }
                }
            }
            unfixed -= fixed_now;
            if fixed_now == 0 {
                // Numerical corner: nothing reached the level; fix the rest at it.
                for j in 0..n {
                    if !self.fixed[j] {
                        let v = self.comp_vars[j];
                        self.fix(j, level / self.vars[v].penalty, &mut values);
                    }
                }
                break;
            }
        }
        self.saturated = saturated;
        for &(v, old, new) in &values {
            self.vars[v].value = new;
            let (old, new) =
                (if old.is_finite() { old } else { 0.0 }, if new.is_finite() { new } else { 0.0 });
            if old != new {
                for k in 0..self.vars[v].uses.len() {
                    let (r, c) = self.vars[v].uses[k];
                    self.resources[r].used += c * (new - old);
                }
            }
        }
        *out = values;
    }

    /// Gathers the set to solve (`comp_res`, `comp_vars`) from `seeds`: the whole component
    /// reachable from them, breadth-first over resources and the variables sharing them, or,
    /// where it is too large, the variables on the seeds' resources only (on a crowded one, the
    /// `hints` alone until enough have changed; see [`System::solve_around`]).
    fn gather(&mut self, seeds: &[usize], hints: &[usize]) {
        // Breadth-first over resources and the sharing variables on them.
        let e = self.start_set(seeds);
        let mut i = 0;
        // A seed resource alone over the limit makes the component too large: no need to
        // explore it.
        self.solves += 1;
        let now = self.solves;
        let mut local_only = seeds.iter().any(|&r| {
            self.resources[r].vars.len() > EXACT_LIMIT || self.resources[r].large_until > now
        });
        while !local_only && i < self.comp_res.len() {
            let r = self.comp_res[i];
            i += 1;
            if self.comp_vars.len() > EXACT_LIMIT {
                // Remember it for a while (longer on larger platforms, whose components stay
                // large longer): the next changes here need not explore it again.
                let memory = LARGE_MEMORY.max(16 * self.resources.len() as u64);
                for k in 0..self.comp_res.len() {
                    let r = self.comp_res[k];
                    self.resources[r].large_until = now + memory;
                }
                local_only = true;
                break;
            }
            for k in 0..self.resources[r].vars.len() {
                let v = self.resources[r].vars[k];
                self.join(v, e);
            }
        }
        if local_only {
            // Too large a component to solve whole: re-solve the variables on the seeds'
            // resources only, the others keeping their rates (and their share of capacity).
            let e = self.start_set(seeds);
            self.partial.clear();
            for &r in seeds {
                let crowd = self.resources[r].vars.len();
                let mut take_all = true;
                if crowd > CROWDED {
                    self.resources[r].changes += 1;
                    if self.resources[r].changes * 16 < crowd as u32 {
                        take_all = false;
                        self.partial.push(r);
                    } else {
                        self.resources[r].changes = 0;
                    }
                }
                if take_all {
                    for k in 0..self.resources[r].vars.len() {
                        let v = self.resources[r].vars[k];
                        self.join(v, e);
                    }
                } else {
                    for &v in hints {
                        if self.vars[v].penalty > 0.0 && self.vars[v].uses.iter().any(|u| u.0 == r)
                        {
                            self.join(v, e);
                        }
                    }
                }
            }
        } else {
            self.partial.clear();
        }
    }

    /// The capacity left to the set on each of its `nr` resources (what the variables outside
    /// it use stays theirs; a crowded resource solved in part keeps its new variables' fair
    /// share), each resource's load of penalised variables, and each variable's own limit on
    /// the fair level.
    fn prepare_levels(&mut self, nr: usize) {
        // What the variables outside the set use stays theirs.
        self.remaining.clear();
        self.remaining.extend(
            self.comp_res.iter().map(|&r| self.resources[r].capacity - self.resources[r].used),
        );
        for &v in &self.comp_vars {
            let value = self.vars[v].value;
            if value > 0.0 && value.is_finite() {
                for &(r, c) in self.vars[v].uses.iter() {
                    self.remaining[self.local[r] as usize] += c * value;
                }
            }
        }
        // A crowded resource solved in part: its new variables get at least their fair share
        // (the others are re-balanced once enough have changed).
        for k in 0..self.partial.len() {
            let r = self.partial[k];
            let l = self.local[r] as usize;
            let total = self.resources[r].vars.len().max(1) as f64;
            let mine = self
                .comp_vars
                .iter()
                .filter(|&&v| self.vars[v].uses.iter().any(|u| u.0 == r))
                .count();
            let share = self.resources[r].capacity * mine as f64 / total;
            self.remaining[l] = self.remaining[l].max(share);
        }
        self.load.clear();
        self.load.resize(nr, 0.0);
        self.count.clear();
        self.count.resize(nr, 0);
        // Each variable's own limit on the fair level: its bound (and each fat pipe's capacity
        // over its coefficient) times its penalty.
        self.limit.clear();
        for &v in &self.comp_vars {
            let var = &self.vars[v];
            let mut b = var.bound;
            for &(r, c) in var.uses.iter() {
                let res = &self.resources[r];
                if c > 0.0 {
                    if res.fatpipe {
                        b = b.min(res.capacity / c);
                    } else {
                        let l = self.local[r] as usize;
                        self.load[l] += c / var.penalty;
                        self.count[l] += 1;
                    }
                }
            }
            self.limit.push(b * var.penalty);
        }
    }

    /// Starts a new set to solve, holding the resources `seeds` and no variable; returns its
    /// epoch (the marks of the resources and variables in it). Marks start again from zero when
    /// the epochs wrap around.
    fn start_set(&mut self, seeds: &[usize]) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark_res.iter_mut().for_each(|m| *m = 0);
            self.mark_var.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let e = self.epoch;
        self.comp_res.clear();
        self.comp_vars.clear();
        for &s in seeds {
            if self.mark_res[s] != e {
                self.mark_res[s] = e;
                self.comp_res.push(s);
            }
        }
        e
    }

    /// Adds variable `v` and the resources it uses to the set being solved (marked with epoch
    /// `e`), unless it is in already.
    fn join(&mut self, v: usize, e: u32) {
        if self.mark_var[v] == e {
            return;
        }
        self.mark_var[v] = e;
        self.var_local[v] = self.comp_vars.len() as u32;
        self.comp_vars.push(v);
        for &(r2, _) in self.vars[v].uses.iter() {
            if self.mark_res[r2] != e {
                self.mark_res[r2] = e;
                self.comp_res.push(r2);
            }
        }
    }

    /// Fixes component variable `j` at `value`: its load leaves its resources.
    fn fix(&mut self, j: usize, value: f64, values: &mut [Change]) {
        self.fixed[j] = true;
        values[j].2 = value;
        let v = self.comp_vars[j];
        let pen = self.vars[v].penalty;
        for &(r, c) in self.vars[v].uses.iter() {
            if c > 0.0 && !self.resources[r].fatpipe {
                let l = self.local[r] as usize;
                self.remaining[l] -= c * value;
                self.load[l] -= c / pen;
                self.count[l] -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solve(s: &mut System, seeds: &[usize]) -> Vec<f64> {
        let mut out = Vec::new();
        s.solve_from(seeds, &mut out);
        let mut v: Vec<(usize, f64)> = out.iter().map(|c| (c.0, c.2)).collect();
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    }

    #[test]
    fn flows_on_one_link_share_it_equally_and_a_second_bottleneck_frees_capacity() {
        let mut s = System::default();
        let a = s.add_resource(10.0, false);
        let b = s.add_resource(2.0, false);
        // Two flows on a, one of which also crosses b (capacity 2).
        s.add_var(&[(a, 1.0)], 1.0, f64::INFINITY);
        s.add_var(&[(a, 1.0), (b, 1.0)], 1.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [8.0, 2.0]);
    }

    #[test]
    fn penalties_weigh_shares_bounds_cap_them_and_fat_pipes_do_not_share() {
        let mut s = System::default();
        let a = s.add_resource(9.0, false);
        s.add_var(&[(a, 1.0)], 1.0, f64::INFINITY);
        s.add_var(&[(a, 1.0)], 2.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [6.0, 3.0]);
        let mut s = System::default();
        let a = s.add_resource(9.0, false);
        s.add_var(&[(a, 1.0)], 1.0, 1.0);
        s.add_var(&[(a, 1.0)], 1.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [1.0, 8.0]);
        let mut s = System::default();
        let f = s.add_resource(5.0, true);
        s.add_var(&[(f, 1.0)], 1.0, f64::INFINITY);
        s.add_var(&[(f, 1.0)], 1.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[f]), [5.0, 5.0]);
    }

    #[test]
    fn a_crowded_resource_is_rebalanced_in_batches_and_stays_near_its_capacity() {
        let mut s = System::default();
        let root = s.add_resource(1000.0, false);
        let mut out = Vec::new();
        let mut vars = Vec::new();
        for _ in 0..600 {
            let v = s.add_var(&[(root, 1.0)], 1.0, f64::INFINITY);
            s.solve_around(&[root], &[v], &mut out);
            vars.push(v);
            // Every flow moves, and the link is never overcommitted by more than a batch.
            let used: f64 = vars.iter().map(|&v| s.value(v)).sum();
            assert!(used <= 1000.0 * 1.07 + 1e-9, "{used} with {} flows", vars.len());
            assert!(vars.iter().all(|&v| s.value(v) > 0.0));
        }
        for v in vars.drain(..300) {
            s.remove_var(v);
            s.solve_around(&[root], &[], &mut out);
        }
        let used: f64 = vars.iter().map(|&v| s.value(v)).sum();
        assert!((930.0..=1070.0).contains(&used), "{used}");
    }

    #[test]
    fn a_variable_paying_its_latency_takes_no_share_until_its_penalty_is_set() {
        let mut s = System::default();
        let a = s.add_resource(4.0, false);
        let x = s.add_var(&[(a, 1.0)], 1.0, f64::INFINITY);
        let y = s.add_var(&[(a, 1.0)], 0.0, f64::INFINITY);
        assert_eq!(solve(&mut s, &[a]), [4.0]);
        s.set_penalty(y, 1.0);
        assert_eq!(solve(&mut s, &[a]), [2.0, 2.0]);
        s.remove_var(x);
        assert_eq!(solve(&mut s, &[a]), [4.0]);
        assert_eq!(s.value(y), 4.0);
    }
}
