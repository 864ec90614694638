//! A session and its child agents, followed as one: each member has its own projector, and
//! a child is adopted when its session is created by a call of a member (its header names
//! the member's session and the call), so a front end shows a subagent's work nested under
//! the card of the call that started it.

use std::collections::HashMap;

use dsh_agent::record::ToolProgressRecord;
use dsh_session::{Ephemeral, SessionEvent, SessionHeader, SessionId};
use dsh_tools::ToolRegistry;

use crate::card::Look;
use crate::event::{Shown, Subagent, ViewEvent};
use crate::project::Projector;

/// How deep a family is followed: a damaged or hostile chain of headers must not make a
/// front end keep projectors without end.
const MAX_DEPTH: u32 = 8;

struct Member {
    projector: Projector,
    depth: u32,
}

/// The projectors of a followed session (the root) and of its adopted descendants.
pub struct Family {
    root: Projector,
    children: HashMap<SessionId, Member>,
}

impl Family {
    /// The family of the session `root` follows, with no child yet.
    pub fn new(root: Projector) -> Family {
        Family {
            root,
            children: HashMap::new(),
        }
    }

    /// The root's projector.
    pub fn root(&self) -> &Projector {
        &self.root
    }

    /// The root's projector, to set up.
    pub fn root_mut(&mut self) -> &mut Projector {
        &mut self.root
    }

    /// The projector of a member (the root or an adopted child), when `id` is one.
    pub fn member(&mut self, id: &SessionId) -> Option<&mut Projector> {
        match id == self.root.session() {
            true => Some(&mut self.root),
            false => self.children.get_mut(id).map(|m| &mut m.projector),
        }
    }

    /// The depth of a member: 0 for the root, 1 for its children …
    fn depth(&self, id: &SessionId) -> Option<u32> {
        match id == self.root.session() {
            true => Some(0),
            false => self.children.get(id).map(|m| m.depth),
        }
    }

    /// How many children are followed.
    pub fn children(&self) -> usize {
        self.children.len()
    }

    /// Adopts the session of `header` when a member's call started it, and says so with a
    /// [`Shown::Subagent`] in the child's name; `false` (and nothing shown) for any other
    /// session, one already followed, or one nested deeper than a front end follows.
    pub fn adopt(&mut self, header: &SessionHeader, out: &mut Vec<ViewEvent>) -> bool {
        let (Some(parent), Some(call_id)) = (&header.parent, &header.parent_call) else {
            return false;
        };
        if self.depth(&header.id).is_some() {
            return false;
        }
        let Some(depth) = self.depth(parent).filter(|d| *d < MAX_DEPTH) else {
            return false;
        };
        let Some(parent_view) = self.member(parent) else {
            return false;
        };
        let (card, title, label) = match parent_view.open_card_of_call(call_id) {
            Some(card) => {
                let label = match &card.look {
                    Look::Generic {
                        summary: Some(summary),
                        ..
                    } => summary.clone(),
                    Look::Generic { summary: None, .. } | Look::Terminal { .. } => {
                        card.title.clone()
                    }
                };
                (Some(card.id.clone()), card.title.clone(), label)
            }
            None => (None, String::new(), "subagent".to_owned()),
        };
        let mut projector = Projector::new(header.id.clone());
        projector.set_prices(parent_view.tally().prices.clone());
        let depth = depth + 1;
        out.push(ViewEvent {
            session: header.id.clone(),
            shown: Shown::Subagent(Subagent {
                parent: parent.clone(),
                card,
                call_id: call_id.clone(),
                title,
                label,
                depth,
            }),
        });
        self.children
            .insert(header.id.clone(), Member { projector, depth });
        true
    }

    /// Forgets a child whose session went (its agent was disposed); the root stays.
    pub fn release(&mut self, id: &SessionId) {
        self.children.remove(id);
    }

    /// The events of one appended or stored event of member `session`; nothing for a
    /// session that is not one.
    pub fn event_into(
        &mut self,
        session: &SessionId,
        event: &SessionEvent,
        tools: &dyn ToolRegistry,
        out: &mut Vec<ViewEvent>,
    ) {
        if let Some(projector) = self.member(session) {
            projector.event_into(event, tools, out);
        }
    }

    /// The events of a passing notice of member `session`.
    pub fn ephemeral(&mut self, session: &SessionId, note: &Ephemeral) -> Vec<ViewEvent> {
        match self.member(session) {
            Some(projector) => projector.ephemeral(note),
            None => Vec::new(),
        }
    }

    /// The events of a running call's output in member `session`.
    pub fn progress(&mut self, session: &SessionId, piece: ToolProgressRecord) -> Vec<ViewEvent> {
        match self.member(session) {
            Some(projector) => projector.progress(piece),
            None => Vec::new(),
        }
    }
}
