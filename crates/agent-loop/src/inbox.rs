//! The inbox: follow-ups, and the boundary list of steering and injected messages in
//! acceptance order. Claims take messages out; a claimed message belongs to its turn.

use std::collections::VecDeque;

use dsh_agent::{MessageId, TicketSender, UserMessage};

/// Which verb accepted a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    FollowUp,
    Steer,
    Inject,
}

/// What an accepted request asks of a turn.
pub(crate) enum Work {
    /// A message for the model.
    Say(UserMessage),
    /// A compaction the user asked for; the id is its ticket's.
    Compact(MessageId),
}

/// A request accepted and not yet claimed, with the ticket its caller awaits.
pub(crate) struct Pending {
    pub(crate) work: Work,
    pub(crate) ticket: TicketSender,
}

impl Pending {
    /// The id the request's ticket carries.
    pub(crate) fn id(&self) -> &MessageId {
        match &self.work {
            Work::Say(message) => &message.id,
            Work::Compact(id) => id,
        }
    }
}

#[derive(Default)]
pub(crate) struct Inbox {
    followups: VecDeque<Pending>,
    /// Steering and injected messages, with their kind.
    boundary: VecDeque<(Kind, Pending)>,
}

impl Inbox {
    pub(crate) fn push(&mut self, kind: Kind, pending: Pending) {
        match kind {
            Kind::FollowUp => self.followups.push_back(pending),
            Kind::Steer | Kind::Inject => self.boundary.push_back((kind, pending)),
        }
    }

    pub(crate) fn holds_id(&self, id: &MessageId) -> bool {
        self.followups.iter().any(|p| p.id() == id)
            || self.boundary.iter().any(|(_, p)| p.id() == id)
    }

    /// A follow-up, or steering, is pending: something that opens or extends a turn.
    pub(crate) fn has_waking(&self) -> bool {
        !self.followups.is_empty() || self.has_steering()
    }

    pub(crate) fn has_steering(&self) -> bool {
        self.boundary.iter().any(|(kind, _)| *kind == Kind::Steer)
    }

    /// The first step of a turn: the whole boundary list, then the oldest follow-up.
    pub(crate) fn claim_first(&mut self) -> Vec<Pending> {
        let mut claim = self.claim_boundary();
        if let Some(followup) = self.followups.pop_front() {
            claim.push(followup);
        }
        claim
    }

    /// A later step: the whole boundary list.
    pub(crate) fn claim_boundary(&mut self) -> Vec<Pending> {
        self.boundary.drain(..).map(|(_, p)| p).collect()
    }

    /// Everything pending, for a cancel that dooms it.
    pub(crate) fn take_all(&mut self) -> Vec<Pending> {
        let mut all: Vec<Pending> = self.boundary.drain(..).map(|(_, p)| p).collect();
        all.extend(self.followups.drain(..));
        all
    }
}

#[cfg(test)]
mod tests {
    use dsh_agent::{TurnTicket, UserMessage};

    use super::*;

    fn pending(text: &str) -> Pending {
        let message = UserMessage::user(text);
        let (ticket, _) = TurnTicket::channel(message.id.clone());
        Pending {
            work: Work::Say(message),
            ticket,
        }
    }

    fn texts(claim: &[Pending]) -> Vec<&str> {
        claim
            .iter()
            .map(|p| match &p.work {
                Work::Say(message) => message.text.as_str(),
                Work::Compact(_) => "/compact",
            })
            .collect()
    }

    #[test]
    fn a_turn_claims_the_boundary_list_then_the_oldest_follow_up() {
        let mut inbox = Inbox::default();
        inbox.push(Kind::FollowUp, pending("f1"));
        inbox.push(Kind::Inject, pending("i1"));
        inbox.push(Kind::FollowUp, pending("f2"));
        inbox.push(Kind::Steer, pending("s1"));
        assert_eq!(texts(&inbox.claim_first()), ["i1", "s1", "f1"]);
        assert_eq!(texts(&inbox.claim_boundary()), Vec::<&str>::new());
        assert_eq!(texts(&inbox.claim_first()), ["f2"]);
        assert!(!inbox.has_waking());
    }

    #[test]
    fn only_follow_ups_and_steering_wake_an_agent() {
        let mut inbox = Inbox::default();
        inbox.push(Kind::Inject, pending("notice"));
        assert!(
            !inbox.has_waking(),
            "an injected message rides with the next turn"
        );
        inbox.push(Kind::Steer, pending("steer"));
        assert!(inbox.has_waking() && inbox.has_steering());
        assert_eq!(texts(&inbox.claim_boundary()), ["notice", "steer"]);
        inbox.push(Kind::FollowUp, pending("next"));
        assert!(inbox.has_waking() && !inbox.has_steering());
    }

    #[test]
    fn a_message_is_held_once_and_a_cancel_takes_everything() {
        let mut inbox = Inbox::default();
        let first = pending("a");
        let same = UserMessage {
            id: first.id().clone(),
            ..UserMessage::user("a again")
        };
        inbox.push(Kind::FollowUp, first);
        inbox.push(Kind::Steer, pending("b"));
        assert!(inbox.holds_id(&same.id), "held by id, whatever the text");
        assert!(!inbox.holds_id(&UserMessage::user("c").id));
        assert_eq!(texts(&inbox.take_all()), ["b", "a"]);
        assert!(!inbox.has_waking() && inbox.claim_first().is_empty());
    }
}
