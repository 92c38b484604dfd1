//! Whom this process trusts, as the record says now (docs/SECURITY.md, "Transport";
//! docs/FEDERATION.md, "Trust follows the record").
//!
//! The charter names the founding organisations by the SHA-256 of their authorities'
//! certificates; logged admissions add organisations and logged removals take them away.
//! [`LiveTrust`] holds the set in force, and every handshake this process accepts or makes
//! reads it ([`crate::verify`], [`crate::pin`]): an organisation admitted by entry connects
//! as soon as a replica publishes the new set ([`LiveTrust::set_organisations`]), with no
//! file edit or restart, and one removed is refused from then on and its open connections
//! are closed ([`crate::incoming`]).
//!
//! An authority is trusted by its fingerprint alone: a certificate of the local `ca.pem`, or
//! one the peer presents in its chain (`cert.pem` as `panel pki` writes it: the leaf, then
//! its authority), is a trust anchor exactly when its SHA-256 is the `ca_sha256` of an
//! organisation in force. A process without a charter follows no record and trusts every
//! authority of its `ca.pem`, as a plain client must.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use futures::task::AtomicWaker;
use panel_federation::{Charter, Organisation};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, TrustAnchor, UnixTime};

use crate::peer::Fingerprint;

/// One authority of the local `ca.pem`, parsed once.
#[derive(Clone)]
struct LocalAuthority {
    fingerprint: Fingerprint,
    anchor: TrustAnchor<'static>,
}

/// The trust in force at one moment: which authorities anchor a chain, and to which
/// organisation each belongs. Cheap to share; replaced whole when the record changes it.
pub struct TrustView {
    generation: u64,
    /// Authority fingerprint → organisation, or `None` for a process without a charter
    /// (which trusts every local authority and no presented one).
    organisations: Option<BTreeMap<Fingerprint, String>>,
    /// The local authorities trusted now.
    local: Vec<LocalAuthority>,
    roots: Arc<RootCertStore>,
}

impl std::fmt::Debug for TrustView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustView")
            .field("generation", &self.generation)
            .field("organisations", &self.organisations)
            .finish()
    }
}

impl TrustView {
    fn new(
        generation: u64,
        local: &[LocalAuthority],
        organisations: Option<BTreeMap<Fingerprint, String>>,
    ) -> Self {
        let local: Vec<LocalAuthority> = local
            .iter()
            .filter(|a| {
                organisations
                    .as_ref()
                    .is_none_or(|o| o.contains_key(&a.fingerprint))
            })
            .cloned()
            .collect();
        let roots = RootCertStore {
            roots: local.iter().map(|a| a.anchor.clone()).collect(),
        };
        Self {
            generation,
            organisations,
            local,
            roots: Arc::new(roots),
        }
    }

    /// Increases by one with each change of the set in force.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The organisations in force (name by authority fingerprint); `None` without a
    /// charter.
    pub fn organisations(&self) -> Option<&BTreeMap<Fingerprint, String>> {
        self.organisations.as_ref()
    }

    /// Whether the organisation named `name` is in force.
    pub fn has_organisation(&self, name: &str) -> bool {
        self.organisations
            .as_ref()
            .is_some_and(|o| o.values().any(|n| n == name))
    }

    /// The trust anchors for a chain whose certificates after the leaf are `presented`:
    /// the local authorities in force, plus each presented certificate whose fingerprint
    /// is an organisation's in force (how a newly admitted organisation's identities are
    /// recognised without anyone's `ca.pem` changing).
    pub fn roots_for(&self, presented: &[CertificateDer<'_>]) -> Arc<RootCertStore> {
        let extra = self.presented_authorities(presented);
        if extra.is_empty() {
            return self.roots.clone();
        }
        let mut roots = (*self.roots).clone();
        roots.roots.extend(extra.into_iter().map(|a| a.anchor));
        Arc::new(roots)
    }

    /// The organisation whose authority issued `chain[0]` for client authentication now,
    /// each candidate authority tried alone (the same path building rustls ran in the
    /// handshake), never by comparing issuer names. `None` for a chain no organisation in
    /// force anchors, and always for a process without a charter.
    pub fn organisation_of(&self, chain: &[CertificateDer<'_>]) -> Option<String> {
        let organisations = self.organisations.as_ref()?;
        let (leaf, rest) = chain.split_first()?;
        let cert = webpki::EndEntityCert::try_from(leaf).ok()?;
        let now = UnixTime::now();
        self.local
            .iter()
            .cloned()
            .chain(self.presented_authorities(rest))
            .find(|a| {
                cert.verify_for_usage(
                    webpki::ALL_VERIFICATION_ALGS,
                    std::slice::from_ref(&a.anchor),
                    &[],
                    now,
                    webpki::KeyUsage::client_auth(),
                    None,
                    None,
                )
                .is_ok()
            })
            .and_then(|a| organisations.get(&a.fingerprint).cloned())
    }

    /// Whether a connection that presented `chain` may stay open under this view: always
    /// without a charter (nothing is ever withdrawn there), else when an organisation in
    /// force still anchors it.
    pub fn admits(&self, chain: &[CertificateDer<'_>]) -> bool {
        self.organisations.is_none() || self.organisation_of(chain).is_some()
    }

    fn presented_authorities(&self, presented: &[CertificateDer<'_>]) -> Vec<LocalAuthority> {
        let Some(organisations) = &self.organisations else {
            return Vec::new();
        };
        presented
            .iter()
            .filter_map(|der| {
                let fingerprint = Fingerprint::of_der(der.as_ref());
                if !organisations.contains_key(&fingerprint)
                    || self.local.iter().any(|a| a.fingerprint == fingerprint)
                {
                    return None;
                }
                let anchor = webpki::anchor_from_trusted_cert(der).ok()?.to_owned();
                Some(LocalAuthority {
                    fingerprint,
                    anchor,
                })
            })
            .collect()
    }
}

/// The set of trusted organisations of a process, read by every handshake and replaced
/// when the record changes it; clones share one set.
#[derive(Clone)]
pub struct LiveTrust {
    inner: Arc<Inner>,
}

struct Inner {
    local: Vec<LocalAuthority>,
    chartered: bool,
    view: RwLock<Arc<TrustView>>,
    open: Mutex<OpenConnections>,
}

#[derive(Default)]
struct OpenConnections {
    next: u64,
    by_id: HashMap<u64, (Arc<Vec<CertificateDer<'static>>>, Arc<Withdrawal>)>,
}

impl std::fmt::Debug for LiveTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LiveTrust").field(&self.view()).finish()
    }
}

impl LiveTrust {
    /// The trust of a process holding the PEM bundle `roots_pem` and, if chartered, the
    /// charter: at first its founding organisations.
    pub fn new(roots_pem: &[u8], charter: Option<&Charter>) -> Self {
        let local: Vec<LocalAuthority> = CertificateDer::pem_slice_iter(roots_pem)
            .flatten()
            .filter_map(|der| {
                let anchor = webpki::anchor_from_trusted_cert(&der).ok()?.to_owned();
                Some(LocalAuthority {
                    fingerprint: Fingerprint::of_der(der.as_ref()),
                    anchor,
                })
            })
            .collect();
        let organisations = charter.map(|c| by_fingerprint(&c.organisations));
        let view = TrustView::new(0, &local, organisations);
        Self {
            inner: Arc::new(Inner {
                local,
                chartered: charter.is_some(),
                view: RwLock::new(Arc::new(view)),
                open: Mutex::new(OpenConnections::default()),
            }),
        }
    }

    /// The view in force now.
    pub fn view(&self) -> Arc<TrustView> {
        self.inner
            .view
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Puts `organisations` in force (the charter's plus those admitted, less those removed,
    /// as the record says after one apply), then closes every open connection whose chain
    /// no organisation in force anchors any more. Returns how many it closed, or `None`
    /// when nothing changed (the same set, or a process without a charter, which follows
    /// no record).
    pub fn set_organisations<'a>(
        &self,
        organisations: impl IntoIterator<Item = &'a Organisation>,
    ) -> Option<usize> {
        if !self.inner.chartered {
            return None;
        }
        let wanted: BTreeMap<Fingerprint, String> = organisations
            .into_iter()
            .map(|o| (o.ca_sha256.clone(), o.name.clone()))
            .collect();
        let view = {
            let mut current = self
                .inner
                .view
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if current.organisations.as_ref() == Some(&wanted) {
                return None;
            }
            let view = Arc::new(TrustView::new(
                current.generation + 1,
                &self.inner.local,
                Some(wanted),
            ));
            *current = view.clone();
            view
        };
        Some(self.withdraw_unless(&view))
    }

    /// Closes the open connections `view` no longer admits.
    fn withdraw_unless(&self, view: &TrustView) -> usize {
        let open: Vec<_> = self
            .inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_id
            .values()
            .cloned()
            .collect();
        open.iter()
            .filter(|(chain, withdrawal)| !withdrawal.is_withdrawn() && !view.admits(chain))
            .map(|(_, withdrawal)| withdrawal.withdraw())
            .count()
    }

    /// Tracks an accepted connection that presented `chain` until the returned guard is
    /// dropped. The chain is checked again against the view in force after it is tracked,
    /// so a connection whose handshake ran just before a removal is closed too.
    pub(crate) fn track(&self, chain: Arc<Vec<CertificateDer<'static>>>) -> Tracked {
        let withdrawal = Arc::new(Withdrawal::default());
        let id = {
            let mut open = self
                .inner
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let id = open.next;
            open.next += 1;
            open.by_id.insert(id, (chain.clone(), withdrawal.clone()));
            id
        };
        if !self.view().admits(&chain) {
            withdrawal.withdraw();
        }
        Tracked {
            trust: self.clone(),
            id,
            withdrawal,
        }
    }

    /// How many accepted connections are tracked now.
    pub fn open_connections(&self) -> usize {
        self.inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_id
            .len()
    }
}

fn by_fingerprint(organisations: &[Organisation]) -> BTreeMap<Fingerprint, String> {
    organisations
        .iter()
        .map(|o| (o.ca_sha256.clone(), o.name.clone()))
        .collect()
}

/// A tracked connection; dropping it stops the tracking.
pub(crate) struct Tracked {
    trust: LiveTrust,
    id: u64,
    pub(crate) withdrawal: Arc<Withdrawal>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.trust
            .inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_id
            .remove(&self.id);
    }
}

/// Set when trust in a connection's peer is withdrawn; wakes the task that polls it so an
/// idle connection closes at once rather than at its next byte.
#[derive(Default)]
pub(crate) struct Withdrawal {
    withdrawn: AtomicBool,
    waker: AtomicWaker,
}

impl Withdrawal {
    fn withdraw(&self) {
        self.withdrawn.store(true, Ordering::Release);
        self.waker.wake();
    }

    pub(crate) fn is_withdrawn(&self) -> bool {
        self.withdrawn.load(Ordering::Acquire)
    }

    /// Registers the polling task, then says whether the connection is withdrawn (in this
    /// order, so a withdrawal between the two still wakes the task).
    pub(crate) fn poll_withdrawn(&self, cx: &std::task::Context<'_>) -> bool {
        self.waker.register(cx.waker());
        self.is_withdrawn()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::{TlsMaterial, first_der};
    use crate::pki::{IdentitySpec, Kind, PkiPlan, issue};

    fn client(name: &str, org: &str) -> IdentitySpec {
        IdentitySpec {
            kind: Kind::Client,
            name: name.into(),
            organisation: org.into(),
            hosts: vec![],
        }
    }

    fn plan(orgs: &[&str], clients: &[(&str, &str)]) -> PkiPlan {
        PkiPlan {
            organisations: orgs.iter().map(|o| (*o).into()).collect(),
            identities: clients.iter().map(|(n, o)| client(n, o)).collect(),
            exam: None,
            last_word: None,
            final_panel: None,
            key_seed: None,
        }
    }

    fn chain(issued: &crate::pki::Issued, name: &str) -> Vec<CertificateDer<'static>> {
        let m = TlsMaterial::load(&issued.dir(name)).unwrap();
        CertificateDer::pem_slice_iter(&m.identity.unwrap().0)
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_client_certificate_belongs_to_the_organisation_whose_authority_issued_it() {
        let dir = tempfile::tempdir().unwrap();
        let issued = issue(
            &plan(&["north", "south"], &[("n1", "north"), ("s1", "south")]),
            dir.path(),
        )
        .unwrap();
        let m = TlsMaterial::load(&issued.dir("n1")).unwrap();
        let leaf = |name: &str| {
            let m = TlsMaterial::load(&issued.dir(name)).unwrap();
            vec![CertificateDer::from(
                first_der(&m.identity.unwrap().0).unwrap(),
            )]
        };
        let trust = LiveTrust::new(&m.roots_pem, Some(&issued.charter));
        let view = trust.view();
        assert_eq!(view.organisation_of(&leaf("n1")).as_deref(), Some("north"));
        assert_eq!(view.organisation_of(&leaf("s1")).as_deref(), Some("south"));
        assert_eq!(view.organisation_of(&[b"junk".to_vec().into()]), None);
        // An authority the record no longer trusts gives no organisation, though its
        // certificate is still in ca.pem.
        let north: Vec<_> = issued
            .charter
            .organisations
            .iter()
            .filter(|o| o.name == "north")
            .collect();
        assert_eq!(trust.set_organisations(north.iter().copied()), Some(0));
        assert_eq!(trust.view().organisation_of(&leaf("s1")), None);
        assert!(!trust.view().admits(&leaf("s1")));
        assert_eq!(trust.view().generation(), 1);
        // The same set again changes nothing.
        assert_eq!(trust.set_organisations(north.iter().copied()), None);
        // Without a charter every authority of ca.pem anchors, none names an organisation,
        // and no record is followed.
        let plain = LiveTrust::new(&m.roots_pem, None);
        assert_eq!(plain.view().organisation_of(&leaf("n1")), None);
        assert!(plain.view().admits(&leaf("s1")));
        assert_eq!(plain.view().roots_for(&[]).len(), 2);
        assert_eq!(plain.set_organisations(north.iter().copied()), None);
    }

    /// A newcomer's authority is in nobody's `ca.pem`: its identities present it after
    /// their leaf, and it anchors exactly when the record trusts its fingerprint.
    #[test]
    fn a_presented_authority_anchors_only_while_its_organisation_is_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let founders = issue(
            &plan(&["north", "south"], &[("n1", "north")]),
            &dir.path().join("f"),
        )
        .unwrap();
        let newcomer = issue(&plan(&["east"], &[("e1", "east")]), &dir.path().join("e")).unwrap();
        let roots = std::fs::read(founders.root.join("ca.pem")).unwrap();
        let trust = LiveTrust::new(&roots, Some(&founders.charter));
        let e1 = chain(&newcomer, "e1");
        assert_eq!(e1.len(), 2, "cert.pem holds the leaf and its authority");
        assert_eq!(trust.view().organisation_of(&e1), None);
        assert_eq!(trust.view().roots_for(&e1[1..]).len(), 2);

        let east = &newcomer.charter.organisations[0];
        let mut all: Vec<&Organisation> = founders.charter.organisations.iter().collect();
        all.push(east);
        assert_eq!(trust.set_organisations(all.iter().copied()), Some(0));
        assert_eq!(trust.view().organisation_of(&e1).as_deref(), Some("east"));
        assert_eq!(trust.view().roots_for(&e1[1..]).len(), 3);
        // The leaf alone, without its authority, is not enough.
        assert_eq!(trust.view().organisation_of(&e1[..1]), None);

        // Tracked connections are withdrawn when their organisation leaves, and only they.
        let from_east = trust.track(Arc::new(e1.clone()));
        let from_north = trust.track(Arc::new(chain(&founders, "n1")));
        assert_eq!(trust.open_connections(), 2);
        assert_eq!(
            trust.set_organisations(founders.charter.organisations.iter()),
            Some(1)
        );
        assert!(from_east.withdrawal.is_withdrawn());
        assert!(!from_north.withdrawal.is_withdrawn());
        // One tracked after the removal is withdrawn at once.
        let late = trust.track(Arc::new(e1));
        assert!(late.withdrawal.is_withdrawn());
        drop((from_east, from_north, late));
        assert_eq!(trust.open_connections(), 0);
    }
}
