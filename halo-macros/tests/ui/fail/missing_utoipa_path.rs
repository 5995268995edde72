use halo_macros::halo;

#[halo(why = "Create an order")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
