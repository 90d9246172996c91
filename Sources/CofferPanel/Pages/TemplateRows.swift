import Mustache

// The rows of the panel's long lists name their fields for the templates. Without it the templates find each field
// through reflection, a `Mirror` of the row at every name it reads: 200 grants took 50 ms of a page's time
// (`Benchmarks/support-scale.sh`), where the store's part was 10.

extension GrantRows.Row: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "id": id
        case "created": created
        case "supportId": supportId
        case "credits": credits
        case "status": status
        case "createdBy": createdBy
        case "reason": reason
        case "cancellable": cancellable
        case "back": back
        case "cancelledBy": cancelledBy
        case "cancelledAt": cancelledAt
        default: nil
        }
    }
}

extension AuditPage.Event: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "at": at
        case "actor": actor
        case "action": action
        case "subject": subject
        case "before": before
        case "after": after
        default: nil
        }
    }
}

extension CustomerPage.TimelineRow: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "at": at
        case "kind": kind
        case "summary": summary
        case "credits": credits
        case "balanceAfter": balanceAfter
        case "otherEnvironment": otherEnvironment
        case "fromOtherEnvironment": fromOtherEnvironment
        default: nil
        }
    }
}

extension WebhooksPage.Row: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "endpoint": endpoint
        case "seq": seq
        case "type": type
        case "supportId": supportId
        case "state": state
        case "attempts": attempts
        case "answer": answer
        case "at": at
        case "next": next
        default: nil
        }
    }
}

extension UsersPage.Row: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "supportId": supportId
        case "created": created
        case "balance": balance
        case "deficit": deficit
        case "backupValue": backupValue
        case "backedUp": backedUp
        case "deleted": deleted
        default: nil
        }
    }
}
