use halo_macros::halo;

#[halo(reversible = "yes")]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
