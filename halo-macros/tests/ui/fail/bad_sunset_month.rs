use halo_macros::halo;

#[halo(status = "deprecated", sunset = "2026-13-01")]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
