//! Leader election end to end: one leader among three candidates stepping
//! in turn; when the leader stops renewing, another takes over after the
//! TTL and the old one finds itself a follower; a resignation hands over at
//! once.

use std::time::Duration;

use handoff_client::recipes::{Candidate, Role};

use super::fresh_ns;

const TTL: Duration = Duration::from_millis(2000);

async fn round(candidates: &mut [Candidate]) -> Vec<Role> {
    let mut roles = Vec::new();
    for c in candidates.iter_mut() {
        roles.push(c.step().await.unwrap());
    }
    roles
}

fn leaders(roles: &[Role]) -> Vec<usize> {
    roles.iter().enumerate().filter(|(_, r)| **r == Role::Leader).map(|(i, _)| i).collect()
}

#[tokio::test]
async fn one_leader_and_a_takeover_when_it_stops_renewing() {
    let ns = fresh_ns("leader").await;
    let mut cs: Vec<Candidate> =
        ["c0", "c1", "c2"].iter().map(|id| Candidate::new(&ns, "leader", id.as_bytes(), TTL)).collect();
    let roles = round(&mut cs).await;
    assert_eq!(roles, [Role::Leader, Role::Follower, Role::Follower], "the first to step leads");
    for _ in 0..3 {
        tokio::time::sleep(TTL / 3).await;
        assert_eq!(leaders(&round(&mut cs).await), [0], "the leader renews, the others follow");
    }

    // c0 stops renewing (say it hangs); c1 and c2 keep stepping.
    let mut takeover = None;
    for _ in 0..12 {
        tokio::time::sleep(TTL / 3).await;
        let roles = round(&mut cs[1..]).await;
        match leaders(&roles).as_slice() {
            [] => {}
            [one] => {
                takeover = Some(one + 1);
                break;
            }
            more => panic!("two leaders: {more:?}"),
        }
    }
    let new = takeover.expect("a follower takes over once the TTL ran out");
    assert_eq!(ns.get("leader").await.unwrap().unwrap().value, format!("c{new}").into_bytes());
    assert_eq!(cs[0].step().await.unwrap(), Role::Follower, "the old leader's renewal fails: it follows");
    assert!(cs[0].lease().is_none());

    // A resignation hands over without waiting for the TTL.
    let resigned = cs.remove(new);
    resigned.resign().await.unwrap();
    assert_eq!(leaders(&round(&mut cs).await).len(), 1, "one of the two left leads at once");
}
