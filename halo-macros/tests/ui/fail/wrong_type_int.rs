use halo_macros::halo;

#[halo(timeout_ms = "x")]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
