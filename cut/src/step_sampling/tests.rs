use super::scale_families;
use mpiskel_program::StepCase;

fn case(full: u64, run: u64) -> StepCase {
    StepCase { full, run, body: Vec::new(), note: String::new(), scale: 1.0, cut: None }
}

#[test]
fn the_kinds_of_a_family_that_run_stand_for_those_that_do_not_by_recorded_time() {
    // Family 0: kinds of 1, 2 and 3 steps recorded at 1, 2 and 4 s a step, of which the
    // first two run; family 1: one kind, all of whose steps run.
    let mut cases = [case(1, 1), case(2, 1), case(3, 0), case(5, 5)];
    scale_families(&mut cases, &[0, 0, 0, 1], &[1.0, 2.0, 4.0, 1.0]);
    // (1 + 4 + 12) s recorded by the family, 5 s of it by the kinds that run.
    let scales: Vec<f64> = cases.iter().map(|c| c.scale).collect();
    assert_eq!(scales, [17.0 / 5.0, 17.0 / 5.0, 1.0, 1.0]);
    // Kinds that recorded no time stand for the others by their counts of steps.
    let mut cases = [case(2, 1), case(6, 0)];
    scale_families(&mut cases, &[0, 0], &[0.0, 0.0]);
    assert_eq!(cases[0].scale, 4.0);
}
