use halo_macros::halo;

#[halo(why = "Create an order")]
#[utoipa::path(post, path = "/orders", extensions(("x-team" = json!("a")), ("x-halo-why" = json!("by hand"))))]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
