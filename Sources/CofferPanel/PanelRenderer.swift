import CofferAdmin
import CofferStore
import Foundation
import Mustache

/// Renders the admin panel's pages from the Mustache templates bundled with Coffer (`Panel/*.mustache`):
/// server-side HTML with every value escaped, usable without JavaScript.
public struct PanelRenderer: Sendable {
    private let library: MustacheLibrary

    /// Loads the bundled templates.
    public init() throws {
        guard let folder = Bundle.module.url(forResource: "Panel", withExtension: nil) else {
            throw AdminError.notFound("the panel's templates")
        }
        var library = MustacheLibrary()
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        for file in files where file.pathExtension == "mustache" {
            let text = try String(contentsOf: file, encoding: .utf8)
            try library.register(text, named: file.deletingPathExtension().lastPathComponent)
        }
        self.library = library
    }

    /// A page in its frame, by its model's template.
    func render(_ page: FramedPage) -> String {
        let template = type(of: page.page).template
        return library.render(page, withTemplate: template) ?? "<!doctype html><p>Missing page \(template)</p>"
    }
}
